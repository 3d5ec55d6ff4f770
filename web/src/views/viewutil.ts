// Helpers the types, list, proposals and sign-in views share (kept out of the
// shared store.ts/route.ts, which another engineer owns).
import type { ResourceDefinition } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";
import { useEffect } from "preact/hooks";

import { base, navigate } from "../route";
import { needsSignIn } from "../store";

/** Where the sign-in view sends the user back to afterwards: the current page. */
export function signInPath(): string {
  return `${base}/signin?next=${encodeURIComponent(location.pathname + location.search)}`;
}

/**
 * Sends the user to sign in when cupd says a read needs credentials
 * (Unauthenticated), then back here. Replaces the history entry, so Back
 * does not loop.
 */
export function useSignInRedirect(...errors: unknown[]) {
  const need = errors.some((e) => e !== undefined && needsSignIn(e));
  useEffect(() => {
    if (need && !location.pathname.startsWith(`${base}/signin`)) navigate(signInPath(), true);
  }, [need]);
}

/**
 * Kubernetes' version priority: GA before beta before alpha, higher numbers
 * first; other names after, alphabetically.
 */
export function versionPriority(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
    if (!m) return [3, 0, 0] as const;
    const stage = m[2] === undefined ? 0 : m[2] === "beta" ? 1 : 2;
    return [stage, -Number(m[1]), -Number(m[3] ?? 0)] as const;
  };
  const pa = parse(a);
  const pb = parse(b);
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i] - pb[i];
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A definition's served versions, preferred first. */
export function versionsOf(d: ResourceDefinition): string[] {
  return d.versions.map((v) => v.name).sort(versionPriority);
}

/** The version links go to: the preferred one. */
export function preferredVersion(d: ResourceDefinition): string {
  return versionsOf(d)[0] ?? "";
}

/** Plain byte-order comparison, as cupd sorts names. */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
