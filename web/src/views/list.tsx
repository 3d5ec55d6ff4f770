// A type's resources in one namespace or in all: live, filtered, paged.
// Only one page of rows is ever rendered (cupd pages on the server), so a
// type with 10,000 resources is as quick to show as one with ten.
import type { ResourceDefinition } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";
import type { Resource } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

import { discovery, errorCode, Code } from "../api";
import { Ago, ErrorBox, Labels, Link, Loading } from "../components/common";
import { dateOf } from "../components/dates";
import { cellText, objectOf, parsePath, valueAt } from "./jsonpath";
import { base, listPath, navigate, resourcePath, setQuery, type Route } from "../route";
import { findDefinition, useAccess, useLoad } from "../store";
import { useLiveList, type LiveState, type Row } from "./listlive";
import { useSignInRedirect } from "./viewutil";
import "./list.css";

type ListRoute = Extract<Route, { view: "list" }>;

const defaultPageSize = 50;
const pageSizes = [10, 20, 50, 100, 200, 500];
const maxPageSize = 1000;

/** A DNS subdomain, as cupd wants a name (checked again by cupd). */
const nameRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A DNS label, as cupd wants a namespace. */
const namespaceRe = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

// What the app has learnt of page tokens while paging forward: the token of
// the page before each, and each page's number. A page opened from a shared
// link has neither; its Previous goes to the first page.
const previousOf = new Map<string, string>();
const numberOf = new Map<string, number>();

/**
 * A column of the list: NAME (and NAMESPACE across namespaces), then the
 * type's printer columns of priority 0 (additionalPrinterColumns, as
 * kubectl shows them), LABELS, AGE and the resource version. Every cell is
 * rendered as text.
 */
export type Column = {
  id: string;
  header: string;
  cell: (row: Row, t: { group: string; version: string; plural: string }) => ComponentChildren;
};

export function columnsFor(def: ResourceDefinition | undefined, version: string, allNamespaces: boolean): Column[] {
  const cols: Column[] = [
    {
      id: "name",
      header: "Name",
      cell: ({ resource: r }, t) => (
        <Link href={resourcePath(t, r.metadata?.namespace ?? "", r.metadata?.name ?? "")}>{r.metadata?.name ?? ""}</Link>
      ),
    },
  ];
  if (allNamespaces) {
    cols.push({ id: "namespace", header: "Namespace", cell: ({ resource: r }) => r.metadata?.namespace ?? "" });
  }
  const printer = def?.versions.find((v) => v.name === version)?.additionalPrinterColumns ?? [];
  for (const [i, pc] of printer.entries()) {
    if (pc.priority > 0) continue;
    const path = parsePath(pc.jsonPath);
    cols.push({
      id: `printer-${i}`,
      header: pc.name,
      cell: ({ resource: r }) => {
        const v = path ? valueAt(objectOf(r), path) : undefined;
        if (v === undefined || v === null) return <span class="muted">—</span>;
        if (pc.type === "date" && typeof v === "string") return <Ago date={dateOf(v)} />;
        return cellText(v);
      },
    });
  }
  cols.push(
    { id: "labels", header: "Labels", cell: ({ resource: r }) => <Labels labels={r.metadata?.labels} /> },
    { id: "age", header: "Age", cell: ({ changed }) => <Ago date={changed ? new Date(changed) : undefined} /> },
    {
      id: "resourceVersion",
      header: "Resource version",
      cell: ({ resource: r }) => {
        const rv = r.metadata?.resourceVersion ?? "";
        return rv ? (
          <code class="sha" title={rv}>
            {rv.slice(0, 12)}
          </code>
        ) : (
          <span class="muted">—</span>
        );
      },
    },
  );
  return cols;
}

function LiveBadge(props: { live: LiveState }) {
  const text = { off: "Not live", connecting: "Connecting…", live: "Live", retrying: "Reconnecting…" }[props.live];
  return (
    <span class={`live-badge live-${props.live}`} data-testid="live" data-state={props.live} title="Changes show here as they are committed">
      <span aria-hidden="true">●</span> {text}
    </span>
  );
}

/** The form that asks for a new resource's name (and namespace, across namespaces). */
function NewForm(props: { t: { group: string; version: string; plural: string }; namespace: string; namespaces: string[]; kind: string }) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  const [ns, setNs] = useState(props.namespace || props.namespaces[0] || "default");
  const [tried, setTried] = useState(false);
  if (!open) {
    return (
      <button type="button" data-testid="new" onClick={() => setOpen(true)}>
        New {props.kind}
      </button>
    );
  }
  const nameOk = nameRe.test(name) && name.length <= 253;
  const nsOk = namespaceRe.test(ns) && ns.length <= 63;
  return (
    <form
      class="new-form"
      data-testid="new-form"
      onSubmit={(e) => {
        e.preventDefault();
        setTried(true);
        if (!nameOk || !nsOk) return;
        navigate(`${resourcePath(props.t, ns, name)}?new=1`);
      }}
    >
      {!props.namespace && (
        <label>
          Namespace
          <input
            data-testid="new-namespace"
            value={ns}
            list="new-namespaces"
            autocomplete="off"
            aria-invalid={tried && !nsOk ? "true" : undefined}
            onInput={(e) => setNs((e.currentTarget as HTMLInputElement).value.trim())}
          />
          <datalist id="new-namespaces">
            {props.namespaces.map((n) => (
              <option key={n} value={n} />
            ))}
          </datalist>
        </label>
      )}
      <label>
        Name of the new {props.kind}
        <input
          data-testid="new-name"
          value={name}
          autocomplete="off"
          autoFocus
          aria-invalid={tried && !nameOk ? "true" : undefined}
          aria-describedby="new-name-help"
          onInput={(e) => setName((e.currentTarget as HTMLInputElement).value.trim())}
        />
      </label>
      <button type="submit">Create…</button>
      <button type="button" class="secondary" onClick={() => setOpen(false)}>
        Cancel
      </button>
      <span id="new-name-help" class={tried && (!nameOk || !nsOk) ? "field-error" : "help"}>
        Lower-case letters, digits, "-" and ".".
      </span>
    </form>
  );
}

export function ListView(props: { route: ListRoute; query: URLSearchParams }) {
  const { route, query } = props;
  const t = { group: route.group, version: route.version, plural: route.plural };
  const namespace = route.namespace;
  const selector = query.get("labelSelector") ?? "";
  const askedSize = Number.parseInt(query.get("pageSize") ?? "", 10);
  const pageSize = Number.isFinite(askedSize) && askedSize > 0 ? Math.min(askedSize, maxPageSize) : defaultPageSize;
  const page = query.get("page") ?? "";

  const def = useLoad(() => findDefinition(t), [t.group, t.version, t.plural]);
  // The namespaces that hold this type; when none do (or cupd cannot count
  // them: a controller that cannot enumerate its namespaces), every
  // namespace that holds anything, so that the switcher still leads somewhere.
  const nss = useLoad(async () => {
    const mine = await discovery.listNamespaces(t);
    if (mine.namespaces.length > 0) return { ...mine, ofType: true };
    return { ...(await discovery.listNamespaces({})), ofType: false };
  }, [t.group, t.version, t.plural]);
  const [reloads, setReloads] = useState(0);
  const list = useLiveList(
    { ...t, namespace, labelSelector: selector, pageSize, pageToken: page },
    reloads,
    () => setQuery({ page: "" }),
  );
  const access = useAccess([{ verb: "put", group: t.group, plural: t.plural, namespace }]);
  useSignInRedirect(def.error, list.error);

  // The selector box edits a draft; Filter (or Enter) applies it.
  const [draft, setDraft] = useState(selector);
  useEffect(() => setDraft(selector), [selector]);

  const kind = def.data?.names?.kind ?? t.plural;
  const namespaces = (nss.data?.namespaces ?? []).map((n) => n.name);
  if (namespace && !namespaces.includes(namespace)) namespaces.push(namespace);
  namespaces.sort();
  const total = (() => {
    if (!nss.data?.ofType) return undefined;
    let n = 0;
    for (const x of nss.data.namespaces) {
      if (namespace && x.name !== namespace) continue;
      for (const c of x.types) if (c.group === t.group && c.plural === t.plural) n += c.count;
    }
    return n;
  })();

  const keep = (extra: Record<string, string>) => {
    const q = new URLSearchParams();
    if (selector) q.set("labelSelector", selector);
    if (query.get("pageSize")) q.set("pageSize", String(pageSize));
    for (const [k, v] of Object.entries(extra)) if (v) q.set(k, v);
    const s = q.toString();
    return s ? `?${s}` : "";
  };

  const cols = columnsFor(def.data, t.version, namespace === "");
  const now = Date.now();
  const rows: Row[] = list.rows.slice(0, pageSize);
  const pageNo = page ? numberOf.get(page) : 1;
  const selectorInvalid = list.error !== undefined && errorCode(list.error) === Code.InvalidArgument && selector !== "";

  return (
    <>
      <h1 tabIndex={-1}>
        {kind}
        <span class="muted list-where"> {namespace ? `in ${namespace}` : "in all namespaces"}</span>
      </h1>
      <p class="muted list-type">
        <code>
          {t.plural}.{t.group}/{t.version}
        </code>{" "}
        · <Link href={`${base}/`}>all types</Link>
      </p>
      {def.data === undefined && !def.loading && def.error === undefined && (
        <p class="error" role="alert" data-testid="unknown-type">
          cupd serves no type {t.plural}.{t.group}/{t.version}.
        </p>
      )}
      {def.error !== undefined && <ErrorBox error={def.error} />}

      <div class="toolbar list-toolbar" data-testid="list-toolbar" data-access={access.loading ? "loading" : access.allowed[0] ? "put" : "no-put"}>
        <label>
          Namespace
          <select
            data-testid="namespace-select"
            value={namespace}
            onChange={(e) => navigate(listPath(t, (e.currentTarget as HTMLSelectElement).value) + keep({}))}
          >
            <option value="">All namespaces</option>
            {namespaces.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <form
          class="selector-form"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery({ labelSelector: draft.trim(), page: "" }, false);
          }}
        >
          <label>
            Label selector
            <input
              data-testid="selector-input"
              type="search"
              value={draft}
              placeholder="app=web,tier in (a,b),!beta"
              autocomplete="off"
              spellcheck={false}
              aria-invalid={selectorInvalid ? "true" : undefined}
              onInput={(e) => setDraft((e.currentTarget as HTMLInputElement).value)}
            />
          </label>
          <button type="submit" data-testid="selector-apply">
            Filter
          </button>
          {selector && (
            <button
              type="button"
              class="secondary"
              data-testid="selector-clear"
              onClick={() => setQuery({ labelSelector: "", page: "" }, false)}
            >
              Clear
            </button>
          )}
        </form>
        <label>
          Per page
          <select
            data-testid="page-size"
            value={String(pageSize)}
            onChange={(e) => setQuery({ pageSize: (e.currentTarget as HTMLSelectElement).value, page: "" }, false)}
          >
            {[...new Set([...pageSizes, pageSize])].sort((a, b) => a - b).map((n) => (
              <option key={n} value={String(n)}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <span class="toolbar-end">
          <LiveBadge live={list.live} />
          {access.allowed[0] && <NewForm t={t} namespace={namespace} namespaces={namespaces} kind={kind} />}
        </span>
      </div>

      {nss.error !== undefined && errorCode(nss.error) !== Code.Unauthenticated && (
        <p class="muted" data-testid="namespaces-error">
          The namespaces could not be listed; the switcher offers this one and all.
        </p>
      )}
      {list.notice && (
        <p class="notice" role="status" data-testid="live-notice">
          {list.notice}
        </p>
      )}
      {list.error !== undefined && (
        <div data-testid="list-error">
          <ErrorBox error={list.error} onRetry={() => setReloads((n) => n + 1)} />
        </div>
      )}
      {list.loading && <Loading what={`${t.plural}`} />}
      {list.problems > 0 && (
        <p class="notice" data-testid="list-problems">
          {list.problems === 1 ? "1 file" : `${list.problems} files`} in the repository could not be read as {kind} and {list.problems === 1 ? "is" : "are"} left out (see <code>cup get {t.plural} --problems</code>).
        </p>
      )}

      {!list.loading && list.error === undefined && (
        <>
          <p class="muted list-count" data-testid="count" aria-live="polite">
            {rows.length === 0
              ? selector
                ? "No resources match the selector on this page."
                : "No resources."
              : `${rows.length === 1 ? "1 resource" : `${rows.length} resources`} on ${pageNo ? `page ${pageNo}` : "this page"}${
                  total !== undefined && !selector ? ` of ${total} in ${namespace ? "this namespace" : "all namespaces"}` : ""
                }.`}
          </p>
          <div class="table-wrap">
            <table data-testid="rows" class="list-table">
              <caption class="visually-hidden">
                {kind} {namespace ? `in ${namespace}` : "in all namespaces"}
              </caption>
              <thead>
                <tr>
                  {cols.map((c) => (
                    <th scope="col" key={c.id}>
                      {c.header}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => {
                  const name = r.resource.metadata?.name ?? "";
                  const ns = r.resource.metadata?.namespace ?? "";
                  return (
                    <tr
                      key={`${r.key}#${r.flashes}`}
                      class={r.flashUntil > now ? "flash" : ""}
                      data-testid={namespace ? `row-${name}` : `row-${ns}-${name}`}
                      data-name={name}
                      data-namespace={ns}
                    >
                      {cols.map((c) => (
                        <td key={c.id}>{c.cell(r, t)}</td>
                      ))}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {list.overflow > 0 && (
            <p class="notice" data-testid="overflow">
              {list.overflow === 1 ? "1 more resource" : `${list.overflow} more resources`} joined this page since it was listed.{" "}
              <button type="button" class="secondary" onClick={() => setReloads((n) => n + 1)}>
                Show the page again
              </button>
            </p>
          )}
          <nav class="pager" aria-label="Pages">
            <button
              type="button"
              class="secondary"
              data-testid="prev-page"
              disabled={!page}
              onClick={() => {
                const prev = previousOf.get(page);
                setQuery({ page: prev ?? "" }, false);
              }}
            >
              {page && previousOf.get(page) === undefined ? "First page" : "Previous"}
            </button>
            <button
              type="button"
              class="secondary"
              data-testid="next-page"
              disabled={!list.nextPageToken}
              onClick={() => {
                previousOf.set(list.nextPageToken, page);
                if (pageNo) numberOf.set(list.nextPageToken, pageNo + 1);
                setQuery({ page: list.nextPageToken }, false);
              }}
            >
              Next
            </button>
          </nav>
        </>
      )}
    </>
  );
}
