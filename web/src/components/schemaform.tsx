// A form generated from a type's JSON Schema.
//
// Why not a JSON-Schema form library: the maintained ones are React-only
// and large. @rjsf/core 6.11.1 + @rjsf/utils + @rjsf/validator-ajv8 on
// preact/compat build (Vite, minified) to 404 KB, 133 KB gzipped, against
// about 5 KB for Preact alone: more than twice the whole app, almost half
// the 300 KB first-load budget. And their validator, Ajv, compiles schemas
// with `new Function`, which cupd's Content-Security-Policy (script-src
// 'self', no 'unsafe-eval') forbids; JSON Forms uses Ajv too. cupd
// validates every write against the schema anyway and names the field, so
// the form needs only the checks a person is helped by while typing
// (bounds, lengths, patterns, required, enums), which fit in this file.
//
// What it renders, from the schema and the value:
//   object with properties   a fieldset; properties in schema order, required marked
//   map of strings           key/value rows (additionalProperties: {type: string})
//   string                   an input (minLength, maxLength, pattern as attributes)
//   integer, number          a number input (minimum, maximum; step 1 for integers)
//   boolean                  a checkbox
//   enum                     a select
//   array                    its items, each removable, and "Add"
//   anything else            a small YAML textarea: oneOf/anyOf/allOf, maps
//                            of other things, objects without properties, and
//                            values whose type is not the schema's (which the
//                            server then names)
// Every field is labelled; descriptions are help text (aria-describedby);
// errors (the browser's checks and the server's) sit next to the field they
// name, with aria-invalid. Field paths are written as cupd names them:
// spec.variants[0].key.
import { createContext, type ComponentChildren } from "preact";
import { useContext, useRef, useState } from "preact/hooks";

import { approx, defineKey, Exact, isInteger, isNumber, isObj, numberText, parseValue, same, toNumber, toYaml, type Obj, type Value } from "./yamldoc";

export type Seg = string | number;
export type Path = Seg[];

/** cupd's name of a path: spec.variants[0].key (numeric keys in brackets, as cupd writes them). */
export function pathText(p: Path): string {
  let s = "";
  p.forEach((seg, i) => {
    if (typeof seg === "number" || (i > 0 && /^[0-9]+$/.test(seg))) s += `[${seg}]`;
    else s += i === 0 ? seg : `.${seg}`;
  });
  return s;
}

/** An id for a path's input: unique per path, no spaces. */
export function fieldId(p: Path): string {
  return "f-" + pathText(p).replace(/\s/g, "_");
}

type Edit = (at: Path, fn: (old: Value | undefined) => Value | undefined) => void;
type Ctx = { edit: Edit; errors: Map<string, string[]>; readOnly: boolean; root: any };
const FormCtx = createContext<Ctx>({ edit: () => {}, errors: new Map(), readOnly: true, root: {} });

/** The value at path p of v. */
export function getIn(v: Value | undefined, p: Path): Value | undefined {
  for (const seg of p) {
    if (v === undefined || v === null) return undefined;
    if (Array.isArray(v) && typeof seg === "number") v = v[seg];
    else if (isObj(v) && typeof seg === "string") v = Object.prototype.hasOwnProperty.call(v, seg) ? v[seg] : undefined;
    else return undefined;
  }
  return v;
}

/** v with the value at p replaced by fn(old); undefined removes it. Creates objects and arrays on the way. */
export function updateIn(v: Value | undefined, p: Path, fn: (old: Value | undefined) => Value | undefined): Value | undefined {
  if (p.length === 0) return fn(v);
  const [seg, ...rest] = p;
  if (typeof seg === "number") {
    const a = Array.isArray(v) ? v.slice() : [];
    const nv = updateIn(a[seg], rest, fn);
    if (nv === undefined) a.splice(seg, 1);
    else a[seg] = nv;
    return a;
  }
  const o: Obj = {};
  const src = isObj(v) ? v : {};
  let done = false;
  for (const [k, x] of Object.entries(src)) {
    if (k !== seg) defineKey(o, k, x);
    else {
      done = true;
      const nv = updateIn(x, rest, fn);
      if (nv !== undefined) defineKey(o, k, nv);
    }
  }
  if (!done) {
    const nv = updateIn(undefined, rest, fn);
    if (nv !== undefined) defineKey(o, seg, nv);
  }
  return o;
}

// --- the schema ----------------------------------------------------------------

/** s with a local $ref ("#/$defs/x", "#/definitions/x") followed; unknown refs give {}. */
export function deref(s: any, root: any): any {
  for (let n = 0; s && typeof s === "object" && typeof s.$ref === "string" && n < 20; n++) {
    if (!s.$ref.startsWith("#")) return {};
    let t = root;
    for (const part of s.$ref.slice(1).split("/").filter(Boolean)) {
      t = t?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    }
    const { $ref: _, ...rest } = s;
    s = { ...(t ?? {}), ...rest };
  }
  return s && typeof s === "object" ? s : {};
}

/** The one type a schema allows (null aside), or "" when it allows several or says none. */
function typeOf(s: any): string {
  if (typeof s.type === "string") return s.type;
  if (Array.isArray(s.type)) {
    const t = s.type.filter((x: string) => x !== "null");
    return t.length === 1 ? t[0] : "";
  }
  if (s.properties) return "object";
  if (s.items) return "array";
  return "";
}

type Kind = "object" | "map" | "array" | "string" | "number" | "boolean" | "enum" | "raw";

/** How a value under a schema is edited. A value of another type than the schema's is edited raw. */
function kindOf(s: any, v: Value | undefined): Kind {
  if (s.oneOf || s.anyOf || s.allOf || s.not || s.if || s.const !== undefined) return "raw";
  if (Array.isArray(s.enum)) {
    const scalars = s.enum.every((x: unknown) => x === null || typeof x !== "object");
    return scalars && (v === undefined || s.enum.some((x: Value) => same(x, v))) ? "enum" : "raw";
  }
  const t = typeOf(s);
  switch (t) {
    case "boolean":
      return v === undefined || typeof v === "boolean" ? "boolean" : "raw";
    case "string":
      return v === undefined || typeof v === "string" ? "string" : "raw";
    case "integer":
    case "number":
      return v === undefined || isNumber(v) ? "number" : "raw";
    case "array":
      return (v === undefined || Array.isArray(v)) && !Array.isArray(s.items) && !s.prefixItems ? "array" : "raw";
    case "object":
      if (v !== undefined && !isObj(v)) return "raw";
      if (s.properties && Object.keys(s.properties).length > 0) return "object";
      if (isStringMap(s)) return "map";
      return "raw";
  }
  return "raw";
}

/** Whether v is of JSON Schema type t (integers by value, as JSON Schema counts them). */
function typeMatches(t: string, v: Value): boolean {
  switch (t) {
    case "object":
      return isObj(v);
    case "array":
      return Array.isArray(v);
    case "string":
      return typeof v === "string";
    case "boolean":
      return typeof v === "boolean";
    case "number":
      return isNumber(v);
    case "integer":
      return isNumber(v) && isInteger(v);
    case "null":
      return v === null;
  }
  return true;
}

function isStringMap(s: any): boolean {
  return !s.properties && s.additionalProperties && typeof s.additionalProperties === "object" && s.additionalProperties.type === "string" && !s.additionalProperties.enum;
}

/** A value a new field or item starts with: the schema's default, or the least its type allows. */
export function initial(s0: any, root: any): Value {
  const s = deref(s0, root);
  if (s.default !== undefined) return s.default as Value;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0] as Value;
  switch (typeOf(s)) {
    case "boolean":
      return false;
    case "string":
      return "";
    case "integer":
    case "number":
      return typeof s.minimum === "number" ? s.minimum : 0;
    case "array":
      return [];
    case "object": {
      const o: Obj = {};
      for (const k of Array.isArray(s.required) ? s.required : []) {
        if (s.properties?.[k]) defineKey(o, k, initial(s.properties[k], root));
      }
      return o;
    }
  }
  return null;
}

// --- checks in the browser ---------------------------------------------------

/**
 * What the browser can tell is wrong with v, by path: required fields,
 * bounds, lengths, patterns, enums, item counts. A value of the wrong type
 * is left to the server, which names it (the form shows it raw).
 */
export function check(s0: any, v: Value | undefined, at: Path, root: any, out = new Map<string, string[]>()): Map<string, string[]> {
  const s = deref(s0, root);
  const add = (p: Path, msg: string) => {
    const k = pathText(p);
    out.set(k, [...(out.get(k) ?? []), msg]);
  };
  if (v === undefined) return out;
  const kind = kindOf(s, v);
  if (Array.isArray(s.enum) && !s.enum.some((x: Value) => same(x, v))) {
    add(at, `must be one of ${s.enum.map((x: unknown) => (typeof x === "string" ? x : JSON.stringify(x))).join(", ")}`);
  }
  if (typeof v === "string") {
    const n = [...v].length;
    if (typeof s.minLength === "number" && n < s.minLength) add(at, s.minLength === 1 ? "must not be empty" : `must be at least ${s.minLength} characters`);
    if (typeof s.maxLength === "number" && n > s.maxLength) add(at, `must be at most ${s.maxLength} characters (now ${n})`);
    const re = regex(s.pattern);
    if (re && !re.test(v)) add(at, `must match the pattern ${s.pattern}`);
  }
  if (isNumber(v) && (typeOf(s) === "integer" || typeOf(s) === "number")) {
    const x = approx(v);
    if (typeOf(s) === "integer" && !isInteger(v)) add(at, "must be a whole number");
    if (typeof s.minimum === "number" && x < s.minimum) add(at, `must be at least ${s.minimum}`);
    if (typeof s.maximum === "number" && x > s.maximum) add(at, `must be at most ${s.maximum}`);
    const exMin = typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum : s.exclusiveMinimum === true ? s.minimum : undefined;
    const exMax = typeof s.exclusiveMaximum === "number" ? s.exclusiveMaximum : s.exclusiveMaximum === true ? s.maximum : undefined;
    if (typeof exMin === "number" && x <= exMin) add(at, `must be more than ${exMin}`);
    if (typeof exMax === "number" && x >= exMax) add(at, `must be less than ${exMax}`);
  }
  if (Array.isArray(v) && kind === "array") {
    if (typeof s.minItems === "number" && v.length < s.minItems) add(at, `needs at least ${s.minItems} items`);
    if (typeof s.maxItems === "number" && v.length > s.maxItems) add(at, `takes at most ${s.maxItems} items`);
    if (s.items) v.forEach((x, i) => check(s.items, x, [...at, i], root, out));
  }
  if (isObj(v) && (kind === "object" || kind === "map")) {
    for (const k of Array.isArray(s.required) ? s.required : []) {
      if (!Object.prototype.hasOwnProperty.call(v, k)) add(s.properties?.[k] ? [...at, k] : at, s.properties?.[k] ? "is required" : `needs ${k}`);
    }
    for (const [k, x] of Object.entries(v)) {
      const ps = s.properties?.[k] ?? (typeof s.additionalProperties === "object" ? s.additionalProperties : undefined);
      if (ps) check(ps, x, [...at, k], root, out);
    }
  }
  return out;
}

const regexes = new Map<string, RegExp | null>();
/** A schema pattern as a RegExp (ECMA-262, as JSON Schema says); null when it does not compile. */
function regex(p: unknown): RegExp | null {
  if (typeof p !== "string") return null;
  if (!regexes.has(p)) {
    let re: RegExp | null = null;
    try {
      re = new RegExp(p, "u");
    } catch {
      /* a pattern this browser cannot compile: the server checks it */
    }
    regexes.set(p, re);
  }
  return regexes.get(p)!;
}

/**
 * A pattern for the HTML pattern attribute, which is anchored and compiled
 * with the v flag; JSON Schema's is a search. Undefined when it does not
 * compile that way (a browser would only log a warning and ignore it).
 */
function htmlPattern(p: unknown): string | undefined {
  if (typeof p !== "string") return undefined;
  const wrapped = `[\\s\\S]*(?:${p})[\\s\\S]*`;
  try {
    new RegExp(`^(?:${wrapped})$`, "v");
    return wrapped;
  } catch {
    return undefined;
  }
}

// --- the paths a form shows --------------------------------------------------

/**
 * Every path the form renders a field for, so that an error the server
 * names lands on it or on the nearest field that holds it.
 */
export function fieldPaths(s0: any, v: Value | undefined, at: Path, root: any, out = new Set<string>()): Set<string> {
  const s = deref(s0, root);
  out.add(pathText(at));
  const kind = kindOf(s, v);
  if (kind === "object") {
    for (const [k, ps] of Object.entries<any>(s.properties)) fieldPaths(ps, getIn(v, [k]), [...at, k], root, out);
  } else if (kind === "array" && Array.isArray(v)) {
    v.forEach((x, i) => fieldPaths(s.items ?? {}, x, [...at, i], root, out));
  }
  return out;
}

/** The path among shown that a path cupd named belongs to: itself, or its nearest ancestor. */
export function nearestField(field: string, shown: Set<string>): string | undefined {
  let f = field;
  for (;;) {
    if (shown.has(f)) return f;
    const cut = Math.max(f.lastIndexOf("."), f.lastIndexOf("["));
    if (cut <= 0) return undefined;
    f = f.slice(0, cut);
  }
}

// --- the form --------------------------------------------------------------------

/** The form for value (at path at) under schema. */
export function SchemaForm(props: {
  schema: any;
  /** The schema local $refs resolve in; schema when unset. */
  root?: any;
  value: Value | undefined;
  at: Path;
  label: string;
  edit: Edit;
  errors: Map<string, string[]>;
  readOnly?: boolean;
}) {
  const ctx: Ctx = { edit: props.edit, errors: props.errors, readOnly: !!props.readOnly, root: props.root ?? props.schema };
  return (
    <FormCtx.Provider value={ctx}>
      <div class="sf">
        <Field schema={props.schema} value={props.value} at={props.at} label={props.label} required={false} />
      </div>
    </FormCtx.Provider>
  );
}

function Errors(props: { id: string; at: Path; errors?: string[] }) {
  if (!props.errors?.length) return null;
  return (
    <span class="field-error" id={props.id} data-testid={`error-${pathText(props.at)}`}>
      {props.errors.join("; ")}
    </span>
  );
}

function Help(props: { id: string; text?: string }) {
  if (typeof props.text !== "string" || !props.text) return null;
  return (
    <span class="help" id={props.id}>
      {props.text}
    </span>
  );
}

function Req(props: { required: boolean }) {
  return props.required ? (
    <span class="sf-req" title="required">
      {" *"}
      <span class="visually-hidden"> (required)</span>
    </span>
  ) : null;
}

/** A fieldset's legend (label, required marker, extra controls), help and errors. */
function FieldsetHead(props: { c: Common }) {
  const { s, props: p, ids, errs } = props.c;
  return (
    <>
      <legend>
        {p.label}
        <Req required={p.required} />
        {p.extra}
      </legend>
      <Help id={ids.help} text={s.description} />
      <Errors id={ids.err} at={p.at} errors={errs} />
    </>
  );
}

type FieldProps = { schema: any; value: Value | undefined; at: Path; label: string; required: boolean; extra?: ComponentChildren };

function Field(props: FieldProps) {
  const { root, errors } = useContext(FormCtx);
  const s = deref(props.schema, root);
  const kind = kindOf(s, props.value);
  const id = fieldId(props.at);
  const errs = errors.get(pathText(props.at));
  const ids = { id, help: `${id}-help`, err: `${id}-err` };
  const describedBy = [s.description ? ids.help : "", errs?.length ? ids.err : ""].filter(Boolean).join(" ") || undefined;
  const common = { s, props, ids, errs, describedBy };
  switch (kind) {
    case "object":
      return <ObjectField {...common} />;
    case "map":
      return <MapField {...common} />;
    case "array":
      return <ArrayField {...common} />;
    case "raw":
      return <RawField {...common} />;
    default:
      return <ScalarField {...common} kind={kind} />;
  }
}

type Common = { s: any; props: FieldProps; ids: { id: string; help: string; err: string }; errs?: string[]; describedBy?: string };

function ScalarField(c: Common & { kind: Kind }) {
  const { edit, readOnly } = useContext(FormCtx);
  const { s, props, ids, errs, describedBy } = c;
  const v = props.value;
  const testid = `field-${pathText(props.at)}`;
  const invalid = errs?.length ? ("true" as const) : undefined;
  const set = (nv: Value | undefined) => edit(props.at, () => nv);
  let input;
  if (c.kind === "boolean") {
    return (
      <div class="sf-field sf-check">
        <span class="sf-checkline">
          <input
            type="checkbox"
            id={ids.id}
            data-testid={testid}
            checked={v === true}
            disabled={readOnly}
            aria-invalid={invalid}
            aria-describedby={describedBy}
            onChange={(e) => set((e.currentTarget as HTMLInputElement).checked)}
          />
          <label for={ids.id}>
            {props.label}
            <Req required={props.required} />
          </label>
          {v === undefined && <span class="muted sf-unset">(not set)</span>}
          {props.extra}
        </span>
        <Help id={ids.help} text={s.description} />
        <Errors id={ids.err} at={props.at} errors={errs} />
      </div>
    );
  }
  if (c.kind === "enum") {
    const idx = v === undefined ? -1 : s.enum.findIndex((x: Value) => same(x, v));
    input = (
      <select
        id={ids.id}
        data-testid={testid}
        disabled={readOnly}
        required={props.required}
        aria-invalid={invalid}
        aria-describedby={describedBy}
        onChange={(e) => {
          const i = Number((e.currentTarget as HTMLSelectElement).value);
          set(i < 0 ? undefined : (s.enum[i] as Value));
        }}
      >
        {(!props.required || idx < 0) && (
          <option value="-1" selected={idx < 0}>
            — not set —
          </option>
        )}
        {s.enum.map((x: Value, i: number) => (
          <option key={i} value={String(i)} selected={i === idx}>
            {typeof x === "string" ? x : JSON.stringify(x)}
          </option>
        ))}
      </select>
    );
  } else if (c.kind === "number") {
    const integer = typeOf(s) === "integer";
    input = (
      <input
        type="number"
        id={ids.id}
        data-testid={testid}
        value={v === undefined ? "" : numberText(v as number | Exact)}
        min={typeof s.minimum === "number" ? s.minimum : undefined}
        max={typeof s.maximum === "number" ? s.maximum : undefined}
        step={integer ? 1 : "any"}
        inputMode={integer ? "numeric" : "decimal"}
        readOnly={readOnly}
        required={props.required}
        aria-invalid={invalid}
        aria-describedby={describedBy}
        onInput={(e) => {
          const el = e.currentTarget as HTMLInputElement;
          if (el.value === "") {
            if (!el.validity.badInput) set(undefined); // cleared; "1e" while typing is left alone
            return;
          }
          const n = toNumber(el.value);
          if (n !== undefined) set(n);
        }}
      />
    );
  } else {
    const str = typeof v === "string" ? v : "";
    const long = str.includes("\n") || (typeof s.maxLength === "number" && s.maxLength > 1000);
    const attrs = {
      id: ids.id,
      "data-testid": testid,
      value: str,
      minLength: typeof s.minLength === "number" ? s.minLength : undefined,
      maxLength: typeof s.maxLength === "number" ? s.maxLength : undefined,
      readOnly,
      required: props.required,
      "aria-invalid": invalid,
      "aria-describedby": describedBy,
      spellcheck: false,
      onInput: (e: Event) => {
        const t = (e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value;
        // An optional string emptied is removed; a required one stays "".
        set(t === "" && !props.required ? undefined : t);
      },
    };
    input = long ? <textarea rows={4} {...attrs} /> : <input type="text" pattern={htmlPattern(s.pattern)} {...attrs} />;
  }
  return (
    <div class="sf-field">
      <label for={ids.id}>
        {props.label}
        <Req required={props.required} />
        {c.kind === "number" && (typeof s.minimum === "number" || typeof s.maximum === "number") && (
          <span class="muted sf-bounds">
            {" "}
            ({typeof s.minimum === "number" ? s.minimum : "…"}–{typeof s.maximum === "number" ? s.maximum : "…"})
          </span>
        )}
      </label>
      <span class="sf-inputline">
        {input}
        {props.extra}
      </span>
      <Help id={ids.help} text={s.description} />
      <Errors id={ids.err} at={props.at} errors={errs} />
    </div>
  );
}

function ObjectField(c: Common) {
  const { root } = useContext(FormCtx);
  const { s, props, ids, errs, describedBy } = c;
  const v = isObj(props.value) ? props.value : undefined;
  const required: string[] = Array.isArray(s.required) ? s.required : [];
  // Properties arrive in no particular order (the schema travels as a
  // protobuf Struct, a map): simple fields first, then the nested ones,
  // each alphabetically.
  const nested = (k: string) => ["object", "map", "array"].includes(kindOf(deref(s.properties[k], root), getIn(v, [k])));
  const known = Object.keys(s.properties).sort((a, b) => Number(nested(a)) - Number(nested(b)) || (a < b ? -1 : a > b ? 1 : 0));
  // Keys the schema does not list: edited together, raw (cupd refuses them
  // when additionalProperties is false, and says so on this fieldset).
  const extraKeys = v ? Object.keys(v).filter((k) => !known.includes(k)) : [];
  return (
    <fieldset class="sf-object" data-testid={`field-${pathText(props.at)}`} aria-describedby={describedBy} aria-invalid={errs?.length ? "true" : undefined}>
      <FieldsetHead c={c} />
      {known.map((k) => (
        <Field key={k} schema={s.properties[k]} value={v ? getIn(v, [k]) : undefined} at={[...props.at, k]} label={deref(s.properties[k], root).title || k} required={required.includes(k)} />
      ))}
      {extraKeys.length > 0 && <ExtraKeys at={props.at} value={v!} keys={extraKeys} additional={s.additionalProperties} />}
    </fieldset>
  );
}

/** The keys of an object the schema does not list, as one YAML mapping. */
function ExtraKeys(props: { at: Path; value: Obj; keys: string[]; additional: unknown }) {
  const { edit } = useContext(FormCtx);
  const sub: Obj = {};
  for (const k of props.keys) defineKey(sub, k, props.value[k]);
  return (
    <RawEditor
      id={`${fieldId(props.at)}-extra`}
      testid={`extra-${pathText(props.at)}`}
      label={props.additional === false ? "Fields the schema does not allow" : "Other fields"}
      value={sub}
      onValue={(nv) =>
        edit(props.at, (old) => {
          const o: Obj = {};
          const src = isObj(old) ? old : {};
          for (const [k, x] of Object.entries(src)) if (!props.keys.includes(k)) defineKey(o, k, x);
          if (isObj(nv)) for (const [k, x] of Object.entries(nv)) defineKey(o, k, x);
          return o;
        })
      }
      mustBeObject
    />
  );
}

function ArrayField(c: Common) {
  const { edit, readOnly, root } = useContext(FormCtx);
  const { s, props, ids, errs, describedBy } = c;
  const items = Array.isArray(props.value) ? props.value : [];
  const itemSchema = s.items ?? {};
  const name = props.label;
  return (
    <fieldset class="sf-array" data-testid={`field-${pathText(props.at)}`} aria-describedby={describedBy} aria-invalid={errs?.length ? "true" : undefined}>
      <legend>
        {name}
        <Req required={props.required} />
        <span class="muted"> ({items.length})</span>
      </legend>
      <Help id={ids.help} text={s.description} />
      <Errors id={ids.err} at={props.at} errors={errs} />
      {items.map((x, i) => (
        <div class="sf-item" key={i}>
          <Field
            schema={itemSchema}
            value={x}
            at={[...props.at, i]}
            label={`${name} ${i + 1}`}
            required={false}
            extra={
              !readOnly && (
                <button
                  type="button"
                  class="secondary sf-remove"
                  data-testid={`remove-${pathText([...props.at, i])}`}
                  aria-label={`Remove ${name} ${i + 1}`}
                  onClick={() =>
                    edit(props.at, (old) => {
                      if (!Array.isArray(old)) return old;
                      const rest = old.filter((_, j) => j !== i);
                      // The last item of an optional list removed: the list goes too.
                      return rest.length === 0 && !props.required ? undefined : rest;
                    })
                  }
                >
                  Remove
                </button>
              )
            }
          />
        </div>
      ))}
      {!readOnly && (
        <button
          type="button"
          class="secondary"
          data-testid={`add-${pathText(props.at)}`}
          onClick={() => edit(props.at, (old) => [...(Array.isArray(old) ? old : []), initial(itemSchema, root)])}
        >
          Add to {name}
        </button>
      )}
    </fieldset>
  );
}

function MapField(c: Common) {
  const { edit, readOnly, errors } = useContext(FormCtx);
  const { s, props, ids, errs } = c;
  return (
    <fieldset class="sf-map" data-testid={`field-${pathText(props.at)}`} aria-invalid={errs?.length ? "true" : undefined}>
      <FieldsetHead c={c} />
      <KeyValues
        id={ids.id}
        name={props.label}
        value={isObj(props.value) ? (props.value as Record<string, string>) : undefined}
        readOnly={readOnly}
        errors={(k) => errors.get(pathText([...props.at, k]))}
        onChange={(m) => edit(props.at, () => m)}
      />
    </fieldset>
  );
}

function RawField(c: Common) {
  const { edit, readOnly } = useContext(FormCtx);
  const { s, props, ids, errs } = c;
  const t = typeOf(s);
  const note = props.value !== undefined && t && !typeMatches(t, props.value) ? `The schema expects ${t === "integer" ? "an integer" : `a${/^[aeiou]/.test(t) ? "n" : ""} ${t}`}.` : "";
  return (
    <div class="sf-field sf-raw">
      <label for={ids.id}>
        {props.label}
        <Req required={props.required} />
        <span class="muted"> (YAML)</span>
      </label>
      <RawEditor
        id={ids.id}
        testid={`field-${pathText(props.at)}`}
        value={props.value}
        readOnly={readOnly}
        invalid={!!errs?.length}
        describedBy={[s.description ? ids.help : "", errs?.length ? ids.err : ""].filter(Boolean).join(" ") || undefined}
        onValue={(nv) => edit(props.at, () => nv)}
        extra={props.extra}
      />
      {note && <span class="help">{note}</span>}
      <Help id={ids.help} text={s.description} />
      <Errors id={ids.err} at={props.at} errors={errs} />
    </div>
  );
}

/**
 * A small YAML textarea for one value. Its text is its own while it does
 * not parse (the value is kept as it was, the parse error shown); a change
 * of the value from elsewhere replaces the text.
 */
function RawEditor(props: {
  id: string;
  testid: string;
  label?: string;
  value: Value | undefined;
  onValue: (v: Value | undefined) => void;
  readOnly?: boolean;
  invalid?: boolean;
  describedBy?: string;
  mustBeObject?: boolean;
  extra?: ComponentChildren;
}) {
  const shown = props.value === undefined ? "" : toYaml(props.value);
  const [text, setText] = useState(shown);
  const [error, setError] = useState("");
  const last = useRef(shown);
  if (shown !== last.current) {
    // Changed from outside (the YAML editor, a reload): show it.
    last.current = shown;
    if (text !== shown) {
      setText(shown);
      setError("");
    }
  }
  const errId = `${props.id}-parse`;
  return (
    <>
      {props.label && (
        <label for={props.id} class="sf-rawlabel">
          {props.label} <span class="muted">(YAML)</span>
        </label>
      )}
      <span class="sf-inputline">
        <textarea
          id={props.id}
          class="code sf-rawtext"
          data-testid={props.testid}
          rows={Math.min(12, Math.max(2, text.split("\n").length))}
          value={text}
          readOnly={props.readOnly}
          spellcheck={false}
          aria-invalid={props.invalid || error ? "true" : undefined}
          aria-describedby={[props.describedBy, error ? errId : ""].filter(Boolean).join(" ") || undefined}
          onInput={(e) => {
            const t = (e.currentTarget as HTMLTextAreaElement).value;
            setText(t);
            try {
              const v = t.trim() === "" ? undefined : parseValue(t);
              if (props.mustBeObject && v !== undefined && !isObj(v)) throw new Error("must be a mapping");
              setError("");
              last.current = v === undefined ? "" : toYaml(v);
              props.onValue(v);
            } catch (err) {
              setError(err instanceof Error ? err.message : String(err));
            }
          }}
        />
        {props.extra}
      </span>
      {error && (
        <pre class="field-error sf-parse" id={errId}>
          {error}
        </pre>
      )}
    </>
  );
}

/**
 * Key/value rows for a map of strings (labels, annotations, a schema's
 * string maps). Rows are the editor's own while a key is empty or
 * repeated; the value it reports leaves those out.
 */
export function KeyValues(props: {
  id: string;
  name: string;
  value: Record<string, string> | undefined;
  onChange: (m: Record<string, string> | undefined) => void;
  readOnly?: boolean;
  multiline?: boolean;
  testid?: string;
  errors?: (key: string) => string[] | undefined;
}) {
  type Row = { k: string; v: string };
  const fromValue = (m?: Record<string, string>): Row[] => Object.entries(m ?? {}).map(([k, v]) => ({ k, v }));
  const [rows, setRows] = useState<Row[]>(() => fromValue(props.value));
  const toMap = (rs: Row[]) => {
    const m: Record<string, string> = {};
    for (const r of rs) if (r.k !== "") defineKey(m, r.k, r.v);
    return m;
  };
  const key = (m?: Record<string, string>) => JSON.stringify(Object.entries(m ?? {}));
  // Rows follow the value when it changes from elsewhere.
  if (key(toMap(rows)) !== key(props.value)) {
    const next = fromValue(props.value);
    // Keep the rows being typed (empty keys) when the value is otherwise the same.
    const pending = rows.filter((r) => r.k === "");
    setRows(key(toMap(rows.filter((r) => r.k !== ""))) === key(props.value) ? [...next, ...pending] : next);
  }
  const update = (rs: Row[]) => {
    setRows(rs);
    const m = toMap(rs);
    props.onChange(Object.keys(m).length ? m : undefined);
  };
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.k, (counts.get(r.k) ?? 0) + 1);
  const base = props.testid ?? props.id;
  return (
    <div class="kv" data-testid={props.testid}>
      {rows.length === 0 && <p class="muted kv-empty">None.</p>}
      {rows.map((r, i) => {
        const dup = r.k !== "" && (counts.get(r.k) ?? 0) > 1;
        const errs = [...(dup ? ["the same key twice: the last one counts"] : []), ...((r.k && props.errors?.(r.k)) || [])];
        const errId = `${props.id}-${i}-err`;
        const V = props.multiline ? "textarea" : "input";
        return (
          <div class="kv-row" key={i}>
            <label>
              <span class="visually-hidden">
                {props.name} key {i + 1}
              </span>
              <input
                type="text"
                class="kv-key"
                data-testid={`${base}-key-${i}`}
                value={r.k}
                placeholder="key"
                readOnly={props.readOnly}
                spellcheck={false}
                aria-invalid={errs.length ? "true" : undefined}
                aria-describedby={errs.length ? errId : undefined}
                onInput={(e) => update(rows.map((x, j) => (j === i ? { ...x, k: (e.currentTarget as HTMLInputElement).value } : x)))}
              />
            </label>
            <label>
              <span class="visually-hidden">
                {props.name} value {i + 1}
                {r.k ? ` (${r.k})` : ""}
              </span>
              <V
                type={props.multiline ? undefined : "text"}
                class="kv-value"
                rows={props.multiline ? 1 : undefined}
                data-testid={`${base}-value-${i}`}
                value={r.v}
                placeholder="value"
                readOnly={props.readOnly}
                spellcheck={false}
                onInput={(e: Event) => update(rows.map((x, j) => (j === i ? { ...x, v: (e.currentTarget as HTMLInputElement).value } : x)))}
              />
            </label>
            {!props.readOnly && (
              <button type="button" class="secondary" aria-label={`Remove ${props.name} ${r.k || i + 1}`} onClick={() => update(rows.filter((_, j) => j !== i))}>
                Remove
              </button>
            )}
            {errs.length > 0 && (
              <span class="field-error kv-error" id={errId}>
                {errs.join("; ")}
              </span>
            )}
          </div>
        );
      })}
      {!props.readOnly && (
        <button type="button" class="secondary" data-testid={`${base}-add`} onClick={() => setRows([...rows, { k: "", v: "" }])}>
          Add {props.name.replace(/s$/, "")}
        </button>
      )}
    </div>
  );
}
