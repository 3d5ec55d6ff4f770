// The resource as the editor holds it, and its YAML and JSON text, with
// numbers kept exactly.
//
// cupd carries a spec as google.protobuf.Struct (every number a float64)
// unless it holds a number a float64 cannot hold; then it sends spec_json,
// JSON text with the numbers as written (README, "Exact numbers"). The
// editor keeps a number as a JavaScript number only when that prints back
// as the text it was read from, and any other (12345678901234567890,
// 0.1000000000000000055511151231257827, 1e400, 1.50) as an Exact: its text. YAML
// is parsed with number tags that make Exacts, and written with a tag that
// prints them as they are; writes always send spec_json, built here without
// going through a float. So what is read is written back digit for digit.
import type { JsonObject } from "@bufbuild/protobuf";
import type { Resource } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";
import { parseDocument, stringify, type ScalarTag } from "yaml";

/** A number that a JavaScript number cannot hold exactly, as JSON number text. */
export class Exact {
  constructor(readonly text: string) {}
  // No toJSON: the yaml package would turn it into something else.
  toString() {
    return this.text;
  }
}

export type Value = null | boolean | string | number | Exact | Value[] | { [key: string]: Value };
export type Obj = { [key: string]: Value };

/** The resource being edited: what a write sends. */
export type Doc = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Value;
};

const numberRe = /^([-+]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([-+]?[0-9]+))?$/;

/** sign, significant digits and exponent: equal exactly when the decimals are. */
function decimalKey(text: string): string | undefined {
  const m = numberRe.exec(text);
  if (!m || (m[2] === "" && !m[3])) return undefined;
  const frac = m[3] ?? "";
  let digits = (m[2] + frac).replace(/^0+/, "");
  if (!digits) return "0";
  let exp = BigInt(m[4] ?? "0") - BigInt(frac.length);
  const trimmed = digits.replace(/0+$/, "");
  exp += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return `${m[1] === "-" ? "-" : ""}${digits}e${exp}`;
}

/** text (a decimal number) as JSON number text: no "+", no leading zeros, no bare ".". */
function jsonNumberText(text: string): string {
  const m = numberRe.exec(text)!;
  const int = m[2].replace(/^0+(?=[0-9])/, "") || "0";
  return (m[1] === "-" ? "-" : "") + int + (m[3] ? "." + m[3] : "") + (m[4] !== undefined ? "e" + m[4] : "");
}

/**
 * The number that text (a decimal, as JSON, YAML or a number input write
 * it) names: a JavaScript number when that prints back as the same text,
 * an Exact otherwise (12345678901234567890, but also 1.50 or 2e3, which
 * stay as written, as cupd stores them); undefined when text is no
 * decimal number.
 */
export function toNumber(text: string): number | Exact | undefined {
  const t = text.trim();
  if (decimalKey(t) === undefined) return undefined;
  const n = Number(t);
  if (Number.isFinite(n) && String(n) === t) return n;
  return new Exact(jsonNumberText(t));
}

/** The text of a number as the form shows it. */
export function numberText(v: number | Exact): string {
  return v instanceof Exact ? v.text : String(v);
}

/** Whether v is a number: a JavaScript one or an Exact. */
export function isNumber(v: unknown): v is number | Exact {
  return typeof v === "number" || v instanceof Exact;
}

/** Whether v is an integer (exactly, for an Exact). */
export function isInteger(v: number | Exact): boolean {
  if (typeof v === "number") return Number.isInteger(v);
  const key = decimalKey(v.text)!;
  return key === "0" || !/e-/.test(key);
}

/** v as a JavaScript number, rounded when it is an Exact: for comparisons with bounds. */
export function approx(v: number | Exact): number {
  return typeof v === "number" ? v : Number(v.text);
}

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Exact);
}

// --- YAML ------------------------------------------------------------------

// Decimal integers and floats resolve to numbers or Exacts; hexadecimal and
// octal integers through BigInt, so that big ones stay exact too. They are
// found before the yaml package's own number tags.
function numberTag(tag: string, test: RegExp, resolve: (s: string) => unknown): ScalarTag {
  return {
    tag,
    default: true,
    test,
    identify: (v) => v instanceof Exact,
    resolve,
    stringify: (item) => String(item.value),
  };
}
const fromBig = (s: string, prefix: string) => {
  const b = BigInt(prefix + s.slice(2));
  return toNumber(b.toString()) ?? Number(b);
};
const exactTags: ScalarTag[] = [
  numberTag("tag:yaml.org,2002:int", /^[-+]?[0-9]+$/, (s) => toNumber(s)),
  numberTag("tag:yaml.org,2002:int", /^0x[0-9a-fA-F]+$/, (s) => fromBig(s, "0x")),
  numberTag("tag:yaml.org,2002:int", /^0o[0-7]+$/, (s) => fromBig(s, "0o")),
  numberTag("tag:yaml.org,2002:float", /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/, (s) => toNumber(s)),
];
const yamlOptions = {
  customTags: (tags: unknown[]) => [...exactTags, ...tags],
  schema: "core",
} as const;

/** Parses YAML text into a value; throws an Error saying where it is wrong. */
export function parseValue(text: string): Value | undefined {
  const doc = parseDocument(text, { ...yamlOptions, prettyErrors: true, uniqueKeys: true } as any);
  if (doc.errors.length > 0) throw new Error(doc.errors[0].message);
  const v = doc.toJS({ maxAliasCount: 100 }) as unknown;
  return plain(v, "");
}

/** v as a Value, refusing what JSON cannot carry (dates, NaN, Infinity, binary). */
function plain(v: unknown, at: string): Value | undefined {
  if (v === undefined) return undefined;
  if (v === null || typeof v === "boolean" || typeof v === "string" || v instanceof Exact) return v;
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new Error(`${at || "the value"}: ${v} is not a number JSON can carry`);
    return v;
  }
  if (typeof v === "bigint") return toNumber(v.toString())!;
  if (Array.isArray(v)) return v.map((x, i) => plain(x, `${at}[${i}]`) ?? null);
  if (v instanceof Map) throw new Error(`${at || "the value"}: a mapping with keys that are not strings`);
  if (typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype) {
    const out: Obj = {};
    for (const [k, x] of Object.entries(v)) {
      const p = plain(x, at ? `${at}.${k}` : k);
      if (p !== undefined) defineKey(out, k, p);
    }
    return out;
  }
  throw new Error(`${at || "the value"}: not JSON (${Object.prototype.toString.call(v).slice(8, -1)})`);
}

/** Sets o[k] as an own data property, whatever k is ("__proto__" included). */
export function defineKey(o: Obj, k: string, v: Value) {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/** v as YAML text. */
export function toYaml(v: unknown): string {
  return stringify(v, { ...yamlOptions, lineWidth: 0, aliasDuplicateObjects: false } as any);
}

// --- JSON ------------------------------------------------------------------

/** v as compact JSON text, numbers as they are (Exacts by their text). */
export function toJson(v: Value): string {
  if (v === null) return "null";
  if (v instanceof Exact) return v.text;
  switch (typeof v) {
    case "boolean":
      return String(v);
    case "string":
      return JSON.stringify(v);
    case "number":
      if (!Number.isFinite(v)) throw new Error(`${v} is not a number JSON can carry`);
      return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${v.map(toJson).join(",")}]`;
  return `{${Object.entries(v)
    .map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`)
    .join(",")}}`;
}

/** Parses JSON text, keeping numbers exactly (as toNumber does). */
export function parseJson(text: string): Value {
  let i = 0;
  const fail = (what: string): never => {
    throw new Error(`JSON: ${what} at offset ${i}`);
  };
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i])) i++;
  };
  const value = (): Value => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const o: Obj = {};
      ws();
      if (text[i] === "}") return i++, o;
      for (;;) {
        ws();
        if (text[i] !== '"') fail("expected a key");
        const k = str();
        ws();
        if (text[i++] !== ":") fail("expected ':'");
        defineKey(o, k, value());
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "}") return i++, o;
        else fail("expected ',' or '}'");
      }
    }
    if (c === "[") {
      i++;
      const a: Value[] = [];
      ws();
      if (text[i] === "]") return i++, a;
      for (;;) {
        a.push(value());
        ws();
        if (text[i] === ",") i++;
        else if (text[i] === "]") return i++, a;
        else fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    for (const [word, v] of [
      ["true", true],
      ["false", false],
      ["null", null],
    ] as const) {
      if (text.startsWith(word, i)) return (i += word.length), v;
    }
    const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?/y;
    m.lastIndex = i;
    const n = m.exec(text);
    if (!n) fail("unexpected character");
    i += n![0].length;
    return toNumber(n![0])!;
  };
  const str = (): string => {
    const m = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
    m.lastIndex = i;
    const s = m.exec(text);
    if (!s) fail("bad string");
    i += s![0].length;
    return JSON.parse(s![0]) as string;
  };
  const v = value();
  ws();
  if (i !== text.length) fail("unexpected text after the value");
  return v;
}

// --- resources -----------------------------------------------------------------

/** The spec of a resource as read: spec_json when cupd sent it (exact), else spec. */
export function specOf(r: Resource | undefined): Value | undefined {
  if (!r) return undefined;
  if (r.specJson) return parseJson(r.specJson);
  return r.spec === undefined ? undefined : fromStruct(r.spec);
}

/** A Struct's value, keys sorted: a Struct is a map, its order means nothing (cupd stores keys sorted). */
function fromStruct(v: unknown): Value {
  if (v === null || typeof v !== "object") return v as Value;
  if (Array.isArray(v)) return v.map(fromStruct);
  const o: Obj = {};
  const m = v as JsonObject;
  for (const k of Object.keys(m).sort()) defineKey(o, k, fromStruct(m[k]));
  return o;
}

/** The editable document of a resource. */
export function docOf(r: Resource): Doc {
  const m = r.metadata;
  const doc: Doc = {
    apiVersion: r.apiVersion,
    kind: r.kind,
    metadata: { name: m?.name ?? "", namespace: m?.namespace ?? "" },
  };
  if (m && Object.keys(m.labels).length) doc.metadata.labels = sortedCopy(m.labels);
  if (m && Object.keys(m.annotations).length) doc.metadata.annotations = sortedCopy(m.annotations);
  const spec = specOf(r);
  if (spec !== undefined) doc.spec = spec;
  return doc;
}

function sortedCopy(m: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of Object.keys(m).sort()) defineKey(out, k, m[k]);
  return out;
}

/** The document as YAML: apiVersion, kind, metadata, spec, in that order. */
export function docYaml(doc: Doc): string {
  const meta: Obj = { name: doc.metadata.name, namespace: doc.metadata.namespace };
  if (doc.metadata.labels && Object.keys(doc.metadata.labels).length) meta.labels = doc.metadata.labels;
  if (doc.metadata.annotations && Object.keys(doc.metadata.annotations).length) meta.annotations = doc.metadata.annotations;
  const out: Obj = { apiVersion: doc.apiVersion, kind: doc.kind, metadata: meta };
  if (doc.spec !== undefined) out.spec = doc.spec;
  return toYaml(out);
}

/**
 * Parses the YAML editor's text into a document; throws an Error saying
 * what is wrong. metadata.resourceVersion is accepted and ignored (the
 * precondition is the version the editor loaded).
 */
export function parseDocYaml(text: string): Doc {
  const v = parseValue(text);
  if (!isObj(v)) throw new Error("The YAML must be a mapping with apiVersion, kind, metadata and spec.");
  for (const k of Object.keys(v)) {
    if (!["apiVersion", "kind", "metadata", "spec"].includes(k)) {
      throw new Error(`${k}: only apiVersion, kind, metadata and spec are written${k === "status" ? " (status is derived by reconcilers)" : ""}.`);
    }
  }
  const str = (x: Value | undefined, at: string): string => {
    if (x === undefined || x === null) return "";
    if (typeof x !== "string") throw new Error(`${at} must be a string.`);
    return x;
  };
  const meta = v.metadata ?? {};
  if (!isObj(meta)) throw new Error("metadata must be a mapping.");
  const doc: Doc = {
    apiVersion: str(v.apiVersion, "apiVersion"),
    kind: str(v.kind, "kind"),
    metadata: { name: str(meta.name, "metadata.name"), namespace: str(meta.namespace, "metadata.namespace") },
  };
  for (const k of Object.keys(meta)) {
    if (!["name", "namespace", "labels", "annotations", "resourceVersion"].includes(k)) {
      throw new Error(`metadata.${k}: only name, namespace, labels and annotations are written.`);
    }
  }
  for (const key of ["labels", "annotations"] as const) {
    const m = meta[key];
    if (m === undefined || m === null) continue;
    if (!isObj(m)) throw new Error(`metadata.${key} must be a mapping of strings.`);
    const out: Record<string, string> = {};
    for (const [k, x] of Object.entries(m)) {
      if (typeof x !== "string") throw new Error(`metadata.${key}.${k} must be a string: quote it ("${x === null ? "" : String(x)}").`);
      defineKey(out, k, x);
    }
    doc.metadata[key] = out;
  }
  if (v.spec !== undefined) doc.spec = v.spec;
  return doc;
}

/** What a Put sends as its resource: the spec always as spec_json, so numbers stay exact. */
export function resourceInit(doc: Doc) {
  return {
    apiVersion: doc.apiVersion,
    kind: doc.kind,
    metadata: {
      name: doc.metadata.name,
      namespace: doc.metadata.namespace,
      labels: doc.metadata.labels ?? {},
      annotations: doc.metadata.annotations ?? {},
    },
    specJson: doc.spec === undefined ? "" : toJson(doc.spec),
  };
}

/** Whether two values are the same JSON. */
export function same(a: Value | undefined, b: Value | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return toJson(a) === toJson(b);
}
