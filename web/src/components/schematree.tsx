// A type's JSON Schema as a readable tree, like `cup explain`: each field with
// its type, a required marker, its description and its constraints; objects
// and arrays of objects fold open with <details>. Schemas come from the
// served configuration: everything here is rendered as text only.
import type { ComponentChildren } from "preact";

import "./schematree.css";

type Schema = Record<string, unknown>;

/** Deeper than this the tree stops: a schema is data, not to be trusted to be small. */
const maxDepth = 24;

function isObject(v: unknown): v is Schema {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function propertiesOf(s: Schema): Record<string, unknown> {
  return isObject(s.properties) ? s.properties : {};
}

/** A schema's type for people: string, []object, map[string]string, integer|null. */
export function typeName(s: Schema, depth = 0): string {
  if (depth > maxDepth) return "…";
  const t = s.type;
  if (typeof t === "string") {
    if (t === "array" && isObject(s.items)) return "[]" + typeName(s.items, depth + 1);
    if (t === "object" && isObject(s.additionalProperties) && Object.keys(propertiesOf(s)).length === 0) {
      return "map[string]" + typeName(s.additionalProperties, depth + 1);
    }
    return t;
  }
  if (Array.isArray(t)) return t.map(String).join("|");
  if (typeof s.$ref === "string") return "ref";
  if (Array.isArray(s.oneOf)) return "oneOf";
  if (Array.isArray(s.anyOf)) return "anyOf";
  if (Array.isArray(s.allOf)) return "allOf";
  if (Array.isArray(s.enum)) return "enum";
  return "any";
}

/** A value from the schema (enum member, default) as JSON text. */
function show(v: unknown): string {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s;
  } catch {
    return String(v);
  }
}

/** The constraints a schema puts on its values, as [name, value] pairs. */
function facets(s: Schema): [string, string][] {
  const out: [string, string][] = [];
  const add = (label: string, key: string) => {
    if (s[key] !== undefined && s[key] !== null && typeof s[key] !== "object") out.push([label, String(s[key])]);
  };
  add("minimum", "minimum");
  add("maximum", "maximum");
  add("exclusive minimum", "exclusiveMinimum");
  add("exclusive maximum", "exclusiveMaximum");
  add("multiple of", "multipleOf");
  add("min length", "minLength");
  add("max length", "maxLength");
  add("pattern", "pattern");
  add("format", "format");
  add("min items", "minItems");
  add("max items", "maxItems");
  add("min properties", "minProperties");
  add("max properties", "maxProperties");
  if (s.uniqueItems === true) out.push(["unique items", "true"]);
  if (s.const !== undefined) out.push(["const", show(s.const)]);
  if (s.default !== undefined) out.push(["default", show(s.default)]);
  if (typeof s.$ref === "string") out.push(["$ref", s.$ref]);
  if (s.additionalProperties === false && Object.keys(propertiesOf(s)).length > 0) out.push(["other fields", "refused"]);
  return out;
}

/**
 * The schema whose fields a field shows as children: its own properties, its
 * items' (arrays of objects, walked into as `cup explain` does), or its
 * additionalProperties' (maps of objects).
 */
function childSchema(s: Schema, depth = 0): Schema | undefined {
  if (depth > maxDepth) return undefined;
  if (Object.keys(propertiesOf(s)).length > 0) return s;
  if (isObject(s.items)) return childSchema(s.items, depth + 1);
  if (isObject(s.additionalProperties)) return childSchema(s.additionalProperties, depth + 1);
  return undefined;
}

/** The alternatives of oneOf/anyOf/allOf, labelled. */
function alternatives(s: Schema): { label: string; schema: Schema }[] {
  const out: { label: string; schema: Schema }[] = [];
  for (const key of ["oneOf", "anyOf", "allOf"] as const) {
    const list = s[key];
    if (!Array.isArray(list)) continue;
    list.forEach((x, i) => {
      if (isObject(x)) out.push({ label: `${key}[${i}]`, schema: x });
    });
  }
  return out;
}

function Field(props: { name: string; schema: Schema; required: boolean; depth: number; path: string; open?: boolean }) {
  const { name, schema: s, required, depth } = props;
  const description = typeof s.description === "string" ? s.description : "";
  const enumValues = Array.isArray(s.enum) ? s.enum : undefined;
  const fs = facets(s);
  const child = depth < maxDepth ? childSchema(s) : undefined;
  const alts = depth < maxDepth ? alternatives(s) : [];
  const head = (
    <>
      <code class="st-name">{name}</code> <span class="type">&lt;{typeName(s)}&gt;</span>
      {required && (
        <>
          {" "}
          <span class="req" title="required">
            required
          </span>
        </>
      )}
    </>
  );
  const body: ComponentChildren = (
    <>
      {description && <p class="st-desc">{description}</p>}
      {enumValues && (
        <p class="st-facets">
          <span class="muted">one of: </span>
          {enumValues.map((v, i) => (
            <code class="st-enum" key={i}>
              {show(v)}
            </code>
          ))}
        </p>
      )}
      {fs.length > 0 && (
        <p class="st-facets">
          {fs.map(([k, v]) => (
            <span class="st-facet" key={k}>
              <span class="muted">{k}: </span>
              <code>{v}</code>
            </span>
          ))}
        </p>
      )}
    </>
  );
  const children = (child || alts.length > 0) && (
    <ul>
      {child && <Fields schema={child} depth={depth + 1} path={props.path} />}
      {alts.map((a) => (
        <Field key={a.label} name={a.label} schema={a.schema} required={false} depth={depth + 1} path={`${props.path}.${a.label}`} />
      ))}
    </ul>
  );
  return (
    <li data-field={props.path}>
      {children ? (
        <details open={props.open}>
          <summary>{head}</summary>
          {body}
          {children}
        </details>
      ) : (
        <div class="st-leaf">
          {head}
          {body}
        </div>
      )}
    </li>
  );
}

function Fields(props: { schema: Schema; depth: number; path: string }) {
  const s = props.schema;
  const req = new Set(Array.isArray(s.required) ? s.required.map(String) : []);
  const names = Object.keys(propertiesOf(s)).sort();
  return (
    <>
      {names.map((k) => {
        const p = propertiesOf(s)[k];
        return (
          <Field key={k} name={k} schema={isObject(p) ? p : {}} required={req.has(k)} depth={props.depth} path={props.path ? `${props.path}.${k}` : k} />
        );
      })}
    </>
  );
}

/**
 * The tree of a type's schema. A schema of the spec alone (target "spec") is
 * shown inside the resource, as `cup explain` does: apiVersion, kind,
 * metadata and spec.
 */
export function SchemaTree(props: { schema: unknown; target: string; kind: string; apiVersion: string }) {
  if (!isObject(props.schema)) return <p class="muted">No schema: any content is accepted.</p>;
  let root: Schema = props.schema;
  const whole = props.target === "resource" || (props.target === "" && "spec" in propertiesOf(root));
  if (!whole) {
    root = {
      type: "object",
      properties: {
        apiVersion: { type: "string", description: `The group and version: ${props.apiVersion}.` },
        kind: { type: "string", description: `The kind: ${props.kind}.` },
        metadata: { type: "object", description: "The namespace, name, labels, annotations and resourceVersion." },
        spec: root,
      },
    };
  }
  const req = new Set(Array.isArray(root.required) ? root.required.map(String) : []);
  const names = Object.keys(propertiesOf(root)).sort();
  return (
    <div class="tree schema-tree">
      <ul>
        {names.map((k) => {
          const p = propertiesOf(root)[k];
          return (
            <Field key={k} name={k} schema={isObject(p) ? p : {}} required={req.has(k)} depth={0} path={k} open={k === "spec"} />
          );
        })}
      </ul>
    </div>
  );
}
