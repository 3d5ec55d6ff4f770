// A resource's history: the commits that changed it, newest first, paged;
// the diff between any two of them; "revert to this revision" (the
// revision's content written back through the normal write path, dry run
// first, with the current resourceVersion as precondition; a revision at
// which the resource was deleted is reverted by deleting it).
import { ChangeType, type HistoryEntry, type Resource, type WriteResult } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";
import { useEffect, useState } from "preact/hooks";

import { Code, errorCode, errorText, resources } from "../api";
import type { TypeRef } from "../store";
import { Ago, Commit, ErrorBox, Loading, OutLink } from "./common";
import { Changes, DiffText, diffTexts } from "./diffview";
import { dateOf } from "./dates";
import { WrittenNote } from "./editor";
import { docOf, docYaml, resourceInit } from "./yamldoc";

const changeNames: Record<number, string> = {
  [ChangeType.CREATED]: "created",
  [ChangeType.MODIFIED]: "modified",
  [ChangeType.DELETED]: "deleted",
};

type Revert = {
  entry: HistoryEntry;
  index: number;
  kind: "put" | "delete";
  resource?: Resource;
  preview?: WriteResult;
  written?: WriteResult;
  error?: unknown;
  busy: boolean;
};

export function History(props: {
  type: TypeRef;
  namespace: string;
  name: string;
  /** The resource now; undefined when it does not exist (deleted). */
  current?: Resource;
  canPut: boolean;
  canDelete: boolean;
  /** Changes when the resource was written, to read the history again. */
  refresh: unknown;
  /** A revert landed. */
  onReverted: () => void;
}) {
  const target = { group: props.type.group, version: props.type.version, plural: props.type.plural, namespace: props.namespace, name: props.name };
  const [entries, setEntries] = useState<HistoryEntry[]>([]);
  const [next, setNext] = useState("");
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>();
  const [selected, setSelected] = useState<string[]>([]);
  const [compare, setCompare] = useState<{ key: string; diff?: string; error?: unknown }>();
  const [revert, setRevert] = useState<Revert>();

  const loadPage = async (token: string) => {
    setLoading(true);
    setError(undefined);
    try {
      const r = await resources.history({ ...target, pageSize: 20, pageToken: token });
      setEntries((old) => (token ? [...old, ...r.entries] : r.entries));
      setNext(r.nextPageToken);
    } catch (err) {
      setError(err);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => {
    loadPage("");
  }, [props.refresh, props.namespace, props.name]);

  // Two revisions chosen: the diff from the older to the newer.
  useEffect(() => {
    if (selected.length !== 2) {
      setCompare(undefined);
      return;
    }
    const order = (c: string) => entries.findIndex((e) => e.commit === c);
    const [newer, older] = [...selected].sort((a, b) => order(a) - order(b));
    const key = `${older}..${newer}`;
    let live = true;
    setCompare({ key });
    Promise.all([yamlAt(older), yamlAt(newer)]).then(
      ([a, b]) => live && setCompare({ key, diff: diffTexts(`${props.name} at ${older.slice(0, 12)}`, `${props.name} at ${newer.slice(0, 12)}`, a, b) }),
      (err) => live && setCompare({ key, error: err }),
    );
    return () => {
      live = false;
    };
  }, [selected.join(",")]);

  /** The resource's YAML at a commit; "" where it did not exist. */
  async function yamlAt(commit: string): Promise<string> {
    try {
      const r = await resources.get({ ...target, revision: commit });
      return docYaml(docOf(r.resource!));
    } catch (err) {
      if (errorCode(err) === Code.NotFound) return "";
      throw err;
    }
  }

  const toggle = (commit: string) =>
    setSelected((s) => (s.includes(commit) ? s.filter((c) => c !== commit) : [...s, commit].slice(-2)));

  const rv = props.current?.metadata?.resourceVersion ?? "";
  const message = (e: HistoryEntry) => `Revert ${props.namespace}/${props.name} to ${e.commit.slice(0, 12)}`;

  async function startRevert(entry: HistoryEntry, index: number) {
    const kind = entry.change === ChangeType.DELETED ? "delete" : "put";
    const r: Revert = { entry, index, kind, busy: true };
    setRevert(r);
    try {
      if (kind === "delete") {
        const d = await resources.delete({ ...target, resourceVersion: rv, dryRun: true });
        setRevert({ ...r, busy: false, preview: d.result });
      } else {
        const old = (await resources.get({ ...target, revision: entry.commit })).resource!;
        const p = await resources.put({ ...target, resource: resourceInit(docOf(old)), resourceVersion: rv, dryRun: true });
        setRevert({ ...r, busy: false, resource: old, preview: p.result });
      }
    } catch (err) {
      setRevert({ ...r, busy: false, error: err });
    }
  }
  async function confirmRevert() {
    if (!revert) return;
    const r = { ...revert, busy: true, error: undefined };
    setRevert(r);
    try {
      const result =
        r.kind === "delete"
          ? (await resources.delete({ ...target, resourceVersion: rv, message: message(r.entry) })).result
          : (await resources.put({ ...target, resource: resourceInit(docOf(r.resource!)), resourceVersion: rv, message: message(r.entry) })).result;
      setRevert({ ...r, busy: false, preview: undefined, written: result });
      props.onReverted();
    } catch (err) {
      setRevert({ ...r, busy: false, error: err });
    }
  }

  const mayRevert = (e: HistoryEntry) => (e.change === ChangeType.DELETED ? props.canDelete && !!props.current : props.canPut);

  return (
    <div class="rv-history">
      <p class="help" id="history-help">
        Newest first. Tick two revisions to see what changed between them.
      </p>
      {error !== undefined && <ErrorBox error={error} onRetry={() => loadPage("")} />}
      <div class="table-wrap">
        <table data-testid="history" class="rv-stack">
          <caption class="visually-hidden">History of {props.name}</caption>
          <thead>
            <tr>
              <th scope="col">
                <span class="visually-hidden">Compare</span>
              </th>
              <th scope="col">Commit</th>
              <th scope="col">When</th>
              <th scope="col">Author</th>
              <th scope="col">Requested by</th>
              <th scope="col">Change</th>
              <th scope="col">Subject</th>
              <th scope="col">Proposal</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e, i) => (
              <tr key={e.commit} data-testid={`history-row-${i}`} data-commit={e.commit}>
                <td data-label="Compare">
                  <input
                    type="checkbox"
                    data-testid={`history-select-${i}`}
                    checked={selected.includes(e.commit)}
                    aria-label={`Compare revision ${e.commit.slice(0, 10)}`}
                    aria-describedby="history-help"
                    onChange={() => toggle(e.commit)}
                  />
                </td>
                <td data-label="Commit">
                  <Commit sha={e.commit} />
                </td>
                <td data-label="When">
                  <Ago date={dateOf(e.time)} />
                </td>
                <td data-label="Author">
                  <span title={e.authorEmail}>{e.authorName}</span>
                </td>
                <td data-label="Requested by">{e.requester || <span class="muted">—</span>}</td>
                <td data-label="Change">{changeNames[e.change] ?? ""}</td>
                <td class="rv-subject" data-label="Subject">{e.subject}</td>
                <td data-label="Proposal">{e.proposal ? <OutLink url={e.proposalUrl}>#{e.proposal}</OutLink> : <span class="muted">—</span>}</td>
                <td>
                  {i > 0 && mayRevert(e) && (
                    <button
                      type="button"
                      class="secondary"
                      data-testid={`revert-${i}`}
                      disabled={revert?.busy}
                      onClick={() => startRevert(e, i)}
                      aria-label={`Revert to ${e.commit.slice(0, 10)}`}
                    >
                      Revert to this
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {loading && <Loading what="history" />}
      {!loading && entries.length === 0 && error === undefined && <p class="muted">No commits changed this resource.</p>}
      {next && !loading && (
        <button type="button" class="secondary" data-testid="history-more" onClick={() => loadPage(next)}>
          Show older
        </button>
      )}

      {compare && (
        <section class="rv-compare" aria-label="Difference between the two revisions" data-testid="history-diff-box">
          <h2 class="rv-h">Between the two revisions</h2>
          {compare.error !== undefined ? (
            <ErrorBox error={compare.error} />
          ) : compare.diff === undefined ? (
            <Loading what="both revisions" />
          ) : compare.diff.split("\n").length <= 3 ? (
            <p class="notice" data-testid="history-diff" data-empty="true">
              The two revisions hold the same resource.
            </p>
          ) : (
            <DiffText diff={compare.diff} testid="history-diff" label="Difference between the two revisions" />
          )}
        </section>
      )}

      {revert && (
        <section class="rv-preview" aria-label="Revert" data-testid="revert-box">
          <h2 class="rv-h">
            Revert to <Commit sha={revert.entry.commit} />
            {revert.kind === "delete" ? " (deleted then): delete it" : ""}
          </h2>
          {revert.busy && <Loading what="what the revert would change" />}
          {revert.error !== undefined && (
            <div class="error" role="alert" data-testid="revert-error">
              {errorCode(revert.error) === Code.Aborted
                ? `${props.name} changed since this page read it: reload the page and try again. (${errorText(revert.error)})`
                : errorText(revert.error)}
            </div>
          )}
          {revert.preview && (
            <>
              <Changes changes={revert.preview.changes} testid="revert-diff" />
              <p class="muted">
                The message will be “<span>{message(revert.entry)}</span>”.
              </p>
              <div class="rv-actions">
                <button type="button" data-testid="revert-confirm" disabled={revert.busy || revert.preview.changes.length === 0} onClick={confirmRevert}>
                  {revert.kind === "delete" ? "Delete it" : "Revert"}
                </button>
                <button type="button" class="secondary" onClick={() => setRevert(undefined)}>
                  Cancel
                </button>
              </div>
            </>
          )}
          {revert.written && <WrittenNote written={{ kind: revert.kind, result: revert.written }} what="Reverted" />}
        </section>
      )}
    </div>
  );
}
