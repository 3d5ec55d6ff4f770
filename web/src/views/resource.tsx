// One resource: its metadata, then three tabs: Edit (form and YAML side by
// side, save with a dry-run diff first), Status (reconcilers' conditions)
// and History (diffs between any two revisions, revert).
import type { Condition, GetResponse, ResourceStatus, WriteResult } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";
import { useMemo, useRef, useState } from "preact/hooks";

import { Code, errorCode, errorText, resources } from "../api";
import { Ago, Commit, ErrorBox, Labels, Link, Loading, OutLink } from "../components/common";
import { dateOf } from "../components/dates";
import { base, listPath, navigate, resourcePath, setQuery, type Route } from "../route";
import { findDefinition, useAccess, useLoad } from "../store";
import "./resource.css";

// The form, YAML, diffs and history come in a chunk of their own, loaded
// when a resource is first shown (see components/resourceparts.ts).
let parts: Promise<typeof import("../components/resourceparts")> | undefined;
function loadParts() {
  parts ??= import("../components/resourceparts");
  parts.catch(() => (parts = undefined));
  return parts;
}

const tabs = [
  { id: "edit", label: "Edit" },
  { id: "status", label: "Status" },
  { id: "history", label: "History" },
] as const;

export function ResourceView(props: { route: Extract<Route, { view: "resource" }>; query: URLSearchParams }) {
  const { group, version, plural, namespace, name } = props.route;
  const type = { group, version, plural };
  const target = { group, version, plural, namespace, name };
  const creating = props.query.get("new") === "1";
  const tab = tabs.some((t) => t.id === props.query.get("tab")) ? props.query.get("tab")! : "edit";

  const def = useLoad(() => findDefinition(type), [group, version, plural]);
  const lazy = useLoad(loadParts, []);
  const get = useLoad<GetResponse | null>(
    () =>
      resources.get(target).catch((err) => {
        // Not there: nothing to show, or something to create.
        if (errorCode(err) === Code.NotFound) return null;
        throw err;
      }),
    [group, version, plural, namespace, name],
  );
  const access = useAccess([
    { verb: "put", group, plural, namespace, name },
    { verb: "delete", group, plural, namespace, name },
  ]);
  const [canPut, canDelete] = access.allowed;
  const [refresh, setRefresh] = useState(0);
  const [deleted, setDeleted] = useState<WriteResult>();
  // Created here: the editor stays (with what it wrote) while the new resource is read back.
  const [created, setCreated] = useState(false);
  const tabRefs = useRef<(HTMLButtonElement | null)[]>([]);

  const kind = def.data?.names?.kind ?? "";
  const found = get.data ?? undefined;
  const r = found?.resource;
  const loaded = useMemo(() => (found?.resource ? { resource: found.resource, commit: found.commit, proposals: found.proposals } : undefined), [found]);

  const onWritten = (what: "put" | "delete", result: WriteResult) => {
    setDeleted(what === "delete" ? result : undefined);
    setCreated(what === "put" && (created || creating));
    setRefresh((n) => n + 1);
    if (creating && what === "put") navigate(resourcePath(type, namespace, name), true);
    get.reload();
  };

  const selectTab = (id: string, focus = false) => {
    setQuery({ tab: id === "edit" ? "" : id });
    if (focus) tabRefs.current[tabs.findIndex((t) => t.id === id)]?.focus();
  };
  const onTabKey = (e: KeyboardEvent) => {
    const i = tabs.findIndex((t) => t.id === tab);
    const to = e.key === "ArrowRight" ? i + 1 : e.key === "ArrowLeft" ? i - 1 : e.key === "Home" ? 0 : e.key === "End" ? tabs.length - 1 : -2;
    if (to === -2) return;
    e.preventDefault();
    selectTab(tabs[(to + tabs.length) % tabs.length].id, true);
  };

  const header = (
    <>
      <nav class="rv-crumbs" aria-label="Breadcrumbs">
        <Link href={`${base}/`}>Types</Link> <span aria-hidden="true">/</span>{" "}
        <Link href={listPath(type, namespace)}>
          {kind || plural} in {namespace}
        </Link>{" "}
        <span aria-hidden="true">/</span> <span aria-current="page">{name}</span>
      </nav>
      <h1 tabIndex={-1}>
        {name} <span class="muted rv-kind">{kind ? `${kind} · ${group}/${version}` : `${group}/${version}`}</span>
      </h1>
    </>
  );

  if (def.error !== undefined || lazy.error !== undefined) {
    return (
      <>
        {header}
        <ErrorBox error={def.error ?? lazy.error} onRetry={def.error !== undefined ? def.reload : lazy.reload} />
      </>
    );
  }
  if (get.error !== undefined) {
    return (
      <>
        {header}
        <ErrorBox error={get.error} onRetry={get.reload} />
      </>
    );
  }
  if ((def.loading && !def.data) || (get.loading && get.data === undefined) || !lazy.data) {
    return (
      <>
        {header}
        <Loading what={name} />
      </>
    );
  }
  if (!def.data) {
    return (
      <>
        {header}
        <p class="error" role="alert">
          cupd serves no type {plural}.{group}/{version}.
        </p>
      </>
    );
  }

  const accessNote =
    access.error !== undefined ? (
      <p class="muted" data-testid="access-note">
        Editing is hidden: cupd could not say what you may do ({errorText(access.error)}).
      </p>
    ) : !access.loading && !canPut ? (
      <p class="muted" data-testid="access-note">
        You may read {name} but not change it.
      </p>
    ) : null;

  const { Editor, History, WrittenNote } = lazy.data;

  if (creating && found) {
    return (
      <>
        {header}
        <p class="notice" role="status" data-testid="exists">
          {name} exists already. <Link href={resourcePath(type, namespace, name)}>Open it</Link> to edit it.
        </p>
      </>
    );
  }

  return (
    <>
      {header}
      {deleted && <WrittenNote written={{ kind: "delete", result: deleted }} />}
      {!found && !creating && !created && (
        <p class="notice" role="status" data-testid="not-found">
          {name} does not exist in {namespace}
          {deleted ? " any more" : ""}.{" "}
          {canPut && (
            <>
              <Link href={`${resourcePath(type, namespace, name)}?new=1`}>Create it</Link>, or see
            </>
          )}
          {canPut ? " its" : "Its"} history under History.
        </p>
      )}
      {creating && (
        <p class="notice" role="status">
          A new {kind} in {namespace}: fill it in, review the changes, then save.
        </p>
      )}
      {found && r && <Meta get={found} />}
      {accessNote}

      <div class="tabs" role="tablist" aria-label="Views of the resource" onKeyDown={onTabKey}>
        {tabs.map((t, i) => (
          <button
            key={t.id}
            ref={(el) => {
              tabRefs.current[i] = el;
            }}
            type="button"
            role="tab"
            id={`tab-${t.id}`}
            data-testid={`tab-${t.id}`}
            aria-selected={tab === t.id}
            aria-controls={`panel-${t.id}`}
            tabIndex={tab === t.id ? 0 : -1}
            onClick={() => selectTab(t.id)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} class="rv-panel">
        {tab === "edit" &&
          (found || creating || created ? (
            <Editor
              type={type}
              namespace={namespace}
              name={name}
              def={def.data}
              loaded={loaded}
              canPut={!!canPut}
              canDelete={!!canDelete}
              onReload={get.reload}
              onWritten={onWritten}
            />
          ) : (
            <p class="muted">Nothing to edit.</p>
          ))}
        {tab === "status" && (found ? <StatusPanel target={target} initial={found.status} refresh={refresh} /> : <p class="muted">No status: the resource does not exist.</p>)}
        {tab === "history" && (
          <History
            type={type}
            namespace={namespace}
            name={name}
            current={r}
            canPut={!!canPut}
            canDelete={!!canDelete}
            refresh={refresh}
            onReverted={() => {
              setRefresh((n) => n + 1);
              get.reload();
            }}
          />
        )}
      </div>
    </>
  );
}

/** What the resource is: namespace, name, labels, annotations, version, commit, open proposals. */
function Meta(props: { get: GetResponse }) {
  const r = props.get.resource!;
  const m = r.metadata;
  const annotations = Object.entries(m?.annotations ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return (
    <dl class="meta rv-meta" data-testid="meta">
      <dt>Namespace</dt>
      <dd data-testid="meta-namespace">{m?.namespace}</dd>
      <dt>Name</dt>
      <dd data-testid="meta-name">{m?.name}</dd>
      <dt>Labels</dt>
      <dd data-testid="meta-labels">
        <Labels labels={m?.labels} />
      </dd>
      <dt>Annotations</dt>
      <dd data-testid="meta-annotations">
        {annotations.length === 0 ? (
          <span class="muted">—</span>
        ) : (
          <ul class="rv-annotations">
            {annotations.map(([k, v]) => (
              <li key={k}>
                <code>{k}</code>: <span class="rv-annotation-value">{v}</span>
              </li>
            ))}
          </ul>
        )}
      </dd>
      <dt>resourceVersion</dt>
      <dd>
        <code data-testid="meta-rv">{m?.resourceVersion}</code>
      </dd>
      <dt>Read at commit</dt>
      <dd data-testid="meta-commit">
        <Commit sha={props.get.commit} />
      </dd>
      {props.get.proposals.length > 0 && (
        <>
          <dt>Open proposals</dt>
          <dd>
            <ul class="rv-proposals" data-testid="meta-proposals">
              {props.get.proposals.map((p) => (
                <li key={p.id}>
                  <OutLink url={p.url}>#{p.id}</OutLink> <span>{p.title}</span> <code>{p.branch}</code>
                </li>
              ))}
            </ul>
          </dd>
        </>
      )}
    </dl>
  );
}

function StatusPanel(props: { target: { group: string; version: string; plural: string; namespace: string; name: string }; initial?: ResourceStatus; refresh: number }) {
  const t = props.target;
  const st = useLoad(() => resources.getStatus(t), [t.group, t.version, t.plural, t.namespace, t.name], props.refresh);
  const conditions: Condition[] | undefined = st.data?.conditions ?? props.initial?.conditions;
  return (
    <div class="rv-status">
      {st.error !== undefined && <ErrorBox error={st.error} onRetry={st.reload} />}
      {st.loading && !conditions && <Loading what="status" />}
      {conditions && conditions.length === 0 && (
        <p class="muted" data-testid="no-conditions">
          No reconciler reports on this type, so it has no conditions.
        </p>
      )}
      {conditions && conditions.length > 0 && (
        <div class="table-wrap">
          <table data-testid="conditions" class="rv-stack">
            <caption class="visually-hidden">Status conditions</caption>
            <thead>
              <tr>
                <th scope="col">Reconciler</th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Reason</th>
                <th scope="col">Message</th>
                <th scope="col">Observed revision</th>
                <th scope="col">Last transition</th>
              </tr>
            </thead>
            <tbody>
              {conditions.map((c, i) => (
                <tr key={i} data-testid={`condition-${i}`}>
                  <td data-label="Reconciler">{c.reconciler}</td>
                  <td data-label="Type">{c.type}</td>
                  <td data-label="Status">
                    <span class={`rv-cond rv-cond-${c.status === "True" ? "true" : c.status === "False" ? "false" : "unknown"}`}>{c.status}</span>
                  </td>
                  <td data-label="Reason">{c.reason}</td>
                  <td class="rv-message-cell" data-label="Message">{c.message}</td>
                  <td data-label="Observed revision">
                    <Commit sha={c.observedRevision} />
                  </td>
                  <td data-label="Last transition">
                    <Ago date={dateOf(c.lastTransitionTime)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {st.data?.commit && (
        <p class="muted">
          Derived at commit <Commit sha={st.data.commit} />.
        </p>
      )}
    </div>
  );
}
