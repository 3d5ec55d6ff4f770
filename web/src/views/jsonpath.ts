// The printer columns' JSONPaths (additionalPrinterColumns[].jsonPath), for
// the list's cells: the simple paths columns use (.spec.rollout,
// .spec.variants[0].key, .metadata.labels['app.kubernetes.io/name']).
// cupd checks the paths with kubectl's parser when it loads a definition;
// a path beyond these (filters, wildcards) shows no value here.
import type { Resource } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";

/** A number as its JSON text, so that no digit is lost on the way to the cell. */
export class Num {
  constructor(readonly text: string) {}
}

type Value = null | boolean | string | number | Num | Value[] | { [key: string]: Value };

const step = /\.([A-Za-z0-9_$-]+)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\]/y;

/** The keys and indices of path, or undefined when it is not a simple path. */
export function parsePath(path: string): (string | number)[] | undefined {
  const out: (string | number)[] = [];
  step.lastIndex = 0;
  while (step.lastIndex < path.length) {
    const m = step.exec(path);
    if (!m) return undefined;
    out.push(m[2] !== undefined ? Number(m[2]) : (m[1] ?? m[3] ?? m[4]));
  }
  return out.length ? out : undefined;
}

/** The value at path in v, or undefined. */
export function valueAt(v: Value | undefined, path: (string | number)[]): Value | undefined {
  for (const k of path) {
    if (v === null || v === undefined || typeof v !== "object" || v instanceof Num) return undefined;
    if (Array.isArray(v)) {
      if (typeof k !== "number") return undefined;
      v = v[k];
    } else {
      if (typeof k !== "string" || !Object.hasOwn(v, k)) return undefined;
      v = v[k];
    }
  }
  return v;
}

/**
 * The resource as its JSON form ({apiVersion, kind, metadata, spec}). A spec
 * sent as spec_json (it holds numbers a float64 cannot) is parsed keeping each
 * number's text, where the browser gives JSON.parse's reviver the source.
 */
export function objectOf(r: Resource): Value {
  // Each cell of a row asks, at every render: the resource is read once.
  let v = objects.get(r);
  if (v === undefined) objects.set(r, (v = readObject(r)));
  return v;
}

const objects = new WeakMap<Resource, Value>();

function readObject(r: Resource): Value {
  const m = r.metadata;
  const metadata: Value = {
    name: m?.name ?? "",
    namespace: m?.namespace ?? "",
    labels: { ...(m?.labels ?? {}) },
    annotations: { ...(m?.annotations ?? {}) },
    resourceVersion: m?.resourceVersion ?? "",
  };
  let spec: Value | undefined = (r.spec as Value | undefined) ?? undefined;
  if (r.specJson) {
    try {
      const revive = (_k: string, v: unknown, ctx?: { source?: string }) => (typeof v === "number" && ctx?.source ? new Num(ctx.source) : v);
      spec = JSON.parse(r.specJson, revive as (k: string, v: unknown) => unknown) as Value;
    } catch {
      spec = undefined;
    }
  }
  const out: { [key: string]: Value } = { apiVersion: r.apiVersion, kind: r.kind, metadata };
  if (spec !== undefined) out.spec = spec;
  return out;
}

/** A value as a cell's text: scalars as they read, the rest as compact JSON. */
export function cellText(v: Value): string {
  return typeof v === "string" ? v : json(v);
}

function json(v: Value): string {
  if (v instanceof Num) return v.text;
  if (Array.isArray(v)) return `[${v.map(json).join(",")}]`;
  if (v !== null && typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${json(x)}`).join(",")}}`;
  return JSON.stringify(v);
}
