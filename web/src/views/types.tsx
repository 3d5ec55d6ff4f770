// The home view: every served type, counts per namespace, each type's schema
// as a tree, and the reconcilers' dependency graph.
import type { ResourceDefinition } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";

import { discovery, errorCode, errorText, Code } from "../api";
import { ErrorBox, Link, Loading } from "../components/common";
import { DependencyGraph } from "../components/graph";
import { SchemaTree } from "../components/schematree";
import { listPath } from "../route";
import { loadDefinitions, useLoad } from "../store";
import { cmp, preferredVersion, useSignInRedirect, versionsOf } from "./viewutil";
import "./types.css";

type Counts = Map<string, { namespace: string; count: number }[]>;

/** How many namespaces a type's row names before it says "and N more". */
const maxNamespacesShown = 12;

function typeKey(group: string, plural: string) {
  return `${group}/${plural}`;
}

function CountsCell(props: { def: ResourceDefinition; version: string; counts?: Counts; countsError?: unknown }) {
  const t = { group: props.def.group, version: props.version, plural: props.def.names?.plural ?? "" };
  const per = props.counts?.get(typeKey(t.group, t.plural)) ?? [];
  const total = per.reduce((n, c) => n + c.count, 0);
  return (
    <div class="type-counts">
      <Link href={listPath(t, "")}>
        <span data-testid={`all-${t.plural}`}>all namespaces{props.counts && per.length > 0 ? ` (${total})` : ""}</span>
      </Link>
      {props.counts && per.length === 0 && (
        <span class="muted" title="cupd counted none of this type: there are none, or its controller cannot enumerate its namespaces">
          none counted
        </span>
      )}
      {per.slice(0, maxNamespacesShown).map((c) => (
        <Link key={c.namespace} href={listPath(t, c.namespace)} class="count-link">
          <span data-testid={`count-${t.plural}-${c.namespace}`}>
            {c.namespace}: {c.count}
          </span>
        </Link>
      ))}
      {per.length > maxNamespacesShown && <span class="muted">and {per.length - maxNamespacesShown} more namespaces</span>}
    </div>
  );
}

export function TypesView() {
  const defs = useLoad(() => loadDefinitions(), []);
  const ns = useLoad(() => discovery.listNamespaces({}), []);
  const graph = useLoad(() => discovery.getDependencyGraph({}), []);
  useSignInRedirect(defs.error, ns.error, graph.error);

  let counts: Counts | undefined;
  if (ns.data) {
    counts = new Map();
    for (const n of ns.data.namespaces) {
      for (const t of n.types) {
        const k = typeKey(t.group, t.plural);
        if (!counts.has(k)) counts.set(k, []);
        counts.get(k)!.push({ namespace: n.name, count: t.count });
      }
    }
    for (const list of counts.values()) list.sort((a, b) => cmp(a.namespace, b.namespace));
  }
  const list = [...(defs.data ?? [])].sort(
    (a, b) => cmp(a.names?.kind ?? "", b.names?.kind ?? "") || cmp(a.group, b.group),
  );

  return (
    <>
      <h1 tabIndex={-1}>Types</h1>
      {defs.error !== undefined && <ErrorBox error={defs.error} onRetry={defs.reload} />}
      {defs.loading && !defs.data && <Loading what="types" />}
      {ns.error !== undefined && errorCode(ns.error) !== Code.Unauthenticated && (
        <p class="notice" data-testid="counts-error">
          Counts per namespace are not available: {errorText(ns.error)}
        </p>
      )}
      {defs.data && (
        <>
          <p class="muted">
            {list.length === 1 ? "1 type" : `${list.length} types`} served
            {counts && ns.data ? `, ${ns.data.namespaces.length === 1 ? "1 namespace" : `${ns.data.namespaces.length} namespaces`} hold resources` : ""}.
          </p>
          <div class="table-wrap">
            <table data-testid="types">
              <caption class="visually-hidden">Served types and how many resources of each every namespace holds</caption>
              <thead>
                <tr>
                  <th scope="col">Kind</th>
                  <th scope="col">Group/version</th>
                  <th scope="col">Plural</th>
                  <th scope="col">Short names</th>
                  <th scope="col">Resources</th>
                </tr>
              </thead>
              <tbody>
                {list.map((d) => {
                  const v = preferredVersion(d);
                  const plural = d.names?.plural ?? "";
                  return (
                    <tr key={d.name} data-testid={`type-${plural}`}>
                      <th scope="row">
                        <Link href={listPath({ group: d.group, version: v, plural }, "")}>{d.names?.kind ?? plural}</Link>
                      </th>
                      <td>
                        <code>
                          {d.group}/{versionsOf(d).join(", ")}
                        </code>
                      </td>
                      <td>
                        <code>{plural}</code>
                      </td>
                      <td>{d.names?.shortNames.length ? <code>{d.names.shortNames.join(", ")}</code> : <span class="muted">—</span>}</td>
                      <td>
                        <CountsCell def={d} version={v} counts={counts} />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </>
      )}

      <h2 id="graph-heading">Reconcilers</h2>
      <p class="muted">
        Which types each reconciler reads (its primary type, and the inputs its mappers relate to it) and which it writes. A
        change to a type wakes the reconcilers that read it.
      </p>
      {graph.error !== undefined && <ErrorBox error={graph.error} onRetry={graph.reload} />}
      {graph.loading && !graph.data && <Loading what="the dependency graph" />}
      {graph.data && <DependencyGraph edges={graph.data.edges} />}

      {defs.data && (
        <>
          <h2>Schemas</h2>
          <p class="muted">The fields of each type, as its JSON Schema describes them. Open a type to see its fields.</p>
          <div class="schemas">
            {list.map((d) => {
              const plural = d.names?.plural ?? "";
              return (
                <details key={d.name} class="schema" data-testid={`schema-${plural}`}>
                  <summary>
                    <strong>{d.names?.kind ?? plural}</strong> <span class="muted">{d.name}</span>
                  </summary>
                  {versionsOf(d).map((vn) => {
                    const v = d.versions.find((x) => x.name === vn)!;
                    return (
                      <section key={vn} class="schema-version" aria-label={`${d.names?.kind ?? plural} ${vn}`}>
                        {d.versions.length > 1 && <h3>{vn}</h3>}
                        <SchemaTree schema={v.schema} target={v.schemaTarget} kind={d.names?.kind ?? ""} apiVersion={`${d.group}/${vn}`} />
                      </section>
                    );
                  })}
                </details>
              );
            })}
          </div>
        </>
      )}
    </>
  );
}
