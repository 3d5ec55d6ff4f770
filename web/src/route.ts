// Every view has a URL under /ui/. Resource views mirror the REST paths:
//   /ui/                                                   types, counts, graph
//   /ui/apis/<group>/<version>/<plural>                    a type in every namespace
//   /ui/apis/<group>/<version>/namespaces/<ns>/<plural>    a type in one namespace
//   /ui/apis/<group>/<version>/namespaces/<ns>/<plural>/<name>   one resource
//   /ui/proposals[/<id>]                                   proposals
//   /ui/signin                                             sign in
// Query parameters keep the rest of a view's state (labelSelector, page, tab).
import { useEffect, useState } from "preact/hooks";

export const base = "/ui";

export type Route =
  | { view: "types" }
  | { view: "list"; group: string; version: string; plural: string; namespace: string }
  | { view: "resource"; group: string; version: string; plural: string; namespace: string; name: string }
  | { view: "proposals"; id: string }
  | { view: "signin" }
  | { view: "notfound"; path: string };

const seg = "([^/]+)";

/** The route of a path (without the query). */
export function parse(path: string): Route {
  const p = path.replace(/\/+$/, "");
  let m: RegExpExecArray | null;
  if (p === base || p === "") return { view: "types" };
  if ((m = new RegExp(`^${base}/apis/${seg}/${seg}/namespaces/${seg}/${seg}/${seg}$`).exec(p))) {
    const [, group, version, namespace, plural, name] = m.map(decodeURIComponent);
    return { view: "resource", group, version, plural, namespace, name };
  }
  if ((m = new RegExp(`^${base}/apis/${seg}/${seg}/namespaces/${seg}/${seg}$`).exec(p))) {
    const [, group, version, namespace, plural] = m.map(decodeURIComponent);
    return { view: "list", group, version, plural, namespace };
  }
  if ((m = new RegExp(`^${base}/apis/${seg}/${seg}/${seg}$`).exec(p))) {
    const [, group, version, plural] = m.map(decodeURIComponent);
    return { view: "list", group, version, plural, namespace: "" };
  }
  if ((m = new RegExp(`^${base}/proposals(?:/([0-9]+))?$`).exec(p))) return { view: "proposals", id: m[1] ?? "" };
  if (p === `${base}/signin`) return { view: "signin" };
  return { view: "notfound", path };
}

const enc = encodeURIComponent;

/** The path of a list: one namespace, or every one when namespace is "". */
export function listPath(t: { group: string; version: string; plural: string }, namespace: string): string {
  return namespace
    ? `${base}/apis/${enc(t.group)}/${enc(t.version)}/namespaces/${enc(namespace)}/${enc(t.plural)}`
    : `${base}/apis/${enc(t.group)}/${enc(t.version)}/${enc(t.plural)}`;
}

/** The path of one resource. */
export function resourcePath(
  t: { group: string; version: string; plural: string },
  namespace: string,
  name: string,
): string {
  return `${listPath(t, namespace)}/${enc(name)}`;
}

/** Goes to url (a path and query under /ui/) without a page load. */
export function navigate(url: string, replace = false) {
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new Event("cup:navigate"));
}

/** Sets (or with "" removes) query parameters of the current URL, replacing the entry. */
export function setQuery(params: Record<string, string>, replace = true) {
  const u = new URL(location.href);
  for (const [k, v] of Object.entries(params)) {
    if (v) u.searchParams.set(k, v);
    else u.searchParams.delete(k);
  }
  navigate(u.pathname + u.search, replace);
}

/** The current location, re-rendering on navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [, setN] = useState(0);
  useEffect(() => {
    const on = () => setN((n) => n + 1);
    window.addEventListener("popstate", on);
    window.addEventListener("cup:navigate", on);
    return () => {
      window.removeEventListener("popstate", on);
      window.removeEventListener("cup:navigate", on);
    };
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/**
 * A click handler for in-app links: plain left clicks navigate without a page
 * load; modified clicks (new tab) are left to the browser.
 */
export function onLinkClick(e: MouseEvent) {
  const a = (e.currentTarget as HTMLAnchorElement | null) ?? null;
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(base)) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
}
