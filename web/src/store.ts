// What the whole app shares: the served types and what the caller may do.
// Both come from cupd; nothing about the policy is guessed here.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AccessCheckSchema, ResourceDefinition } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";
import { useEffect, useState } from "preact/hooks";

import { discovery, errorCode, Code, token } from "./api";

/** A type as the app names it: group, version and plural, plus what discovery says of it. */
export type TypeRef = { group: string; version: string; plural: string };

let definitions: Promise<ResourceDefinition[]> | undefined;

/** Every served type, asked of cupd once per token. */
export function loadDefinitions(): Promise<ResourceDefinition[]> {
  definitions ??= discovery.listDefinitions({}).then((r) => r.definitions);
  definitions.catch(() => (definitions = undefined));
  return definitions;
}

/** The definition of a type, or undefined when cupd does not serve it. */
export async function findDefinition(t: TypeRef): Promise<ResourceDefinition | undefined> {
  const defs = await loadDefinitions();
  return defs.find((d) => d.group === t.group && d.names?.plural === t.plural && d.versions.some((v) => v.name === t.version));
}

/** The JSON Schema of a type's version and what it describes ("resource" or "spec"). */
export function schemaOf(d: ResourceDefinition | undefined, version: string): { schema: any; target: string } | undefined {
  const v = d?.versions.find((v) => v.name === version);
  if (!v?.schema) return undefined;
  return { schema: v.schema, target: v.schemaTarget || "spec" };
}

/** One action to ask about: verb, group, plural, and optionally namespace and name. */
export type Check = MessageInitShape<typeof AccessCheckSchema>;

/** Who the caller is, from CheckAccess with no checks. */
export type Identity = { user: string; method: string; policy: boolean };

type Access = { identity?: Identity; allowed: boolean[]; error?: unknown; loading: boolean };

const accessCache = new Map<string, Promise<{ identity: Identity; allowed: boolean[] }>>();

function checkKey(checks: Check[]): string {
  return token() + "\n" + JSON.stringify(checks.map((c) => [c.verb, c.group, c.plural, c.namespace, c.name]));
}

/** Asks cupd whether the caller may do each check; answers are cached per token. */
export function checkAccess(checks: Check[]): Promise<{ identity: Identity; allowed: boolean[] }> {
  const key = checkKey(checks);
  let p = accessCache.get(key);
  if (!p) {
    p = discovery.checkAccess({ checks }).then((r) => ({
      identity: { user: r.user, method: r.method, policy: r.policy },
      allowed: r.allowed,
    }));
    p.catch(() => accessCache.delete(key));
    accessCache.set(key, p);
  }
  return p;
}

/** Forgets everything learnt under the old token. */
export function resetSession() {
  accessCache.clear();
  definitions = undefined;
}

window.addEventListener("cup:token", resetSession);

/**
 * The answers to checks, re-asked when they or the token change. While
 * loading, and on error, nothing is allowed: hidden until cupd says yes.
 */
export function useAccess(checks: Check[]): Access {
  const key = checkKey(checks);
  const [state, setState] = useState<Access>({ allowed: checks.map(() => false), loading: true });
  useEffect(() => {
    let live = true;
    checkAccess(checks).then(
      (r) => live && setState({ identity: r.identity, allowed: r.allowed, loading: false }),
      (error) => live && setState({ allowed: checks.map(() => false), error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, [key]);
  return state;
}

/** Whether err means the caller must sign in. */
export function needsSignIn(err: unknown): boolean {
  return errorCode(err) === Code.Unauthenticated;
}

/** Re-renders when the token changes. */
export function useToken(): string {
  const [t, setT] = useState(token());
  useEffect(() => {
    const on = () => setT(token());
    window.addEventListener("cup:token", on);
    return () => window.removeEventListener("cup:token", on);
  }, []);
  return t;
}

function sameDeps(a: unknown[], b: unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => Object.is(x, b[i]));
}

/**
 * Runs load when deps change; gives its result, error and a reload. A reload,
 * or a new token, keeps the last result on show while it runs; once deps
 * change, the result for the old deps is no longer given, so a view never
 * shows one filter's or one resource's data under another. A change of
 * refresh runs load again as a reload does.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], refresh?: unknown): { data?: T; error?: unknown; loading: boolean; reload: () => void } {
  const [n, setN] = useState(0);
  const t = useToken();
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean; deps?: unknown[] }>({ loading: true });
  useEffect(() => {
    let live = true;
    setState((s) => ({ data: s.data, loading: true, deps: s.deps }));
    load().then(
      (data) => live && setState({ data, loading: false, deps }),
      (error) => live && setState({ error, loading: false, deps }),
    );
    return () => {
      live = false;
    };
  }, [...deps, refresh, n, t]);
  const reload = () => setN((x) => x + 1);
  if (state.deps !== undefined && !sameDeps(state.deps, deps)) return { loading: true, reload };
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
