// Editing one resource: the schema form and the YAML of the whole resource
// side by side, kept in sync; a dry run that shows the diff, then the
// write with the resourceVersion precondition; conflicts that say who
// changed the resource and offer to reload; the server's schema errors on
// the fields they name; delete, dry run first too.
import type { ResourceDefinition } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";
import { ProposalState, type Proposal } from "@cup-dev/api/cup/v1alpha1/proposal_pb.js";
import { WriteOutcome, type HistoryEntry, type Resource, type WriteResult } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";

import { Code, errorCode, proposals as proposalClient, resources, violations } from "../api";
import { schemaOf, type TypeRef } from "../store";
import { Ago, Commit, ErrorBox, OutLink } from "./common";
import { dateOf } from "./dates";
import { Changes } from "./diffview";
import { check, fieldPaths, initial, KeyValues, nearestField, pathText, SchemaForm, updateIn, type Path } from "./schemaform";
import { docOf, docYaml, parseDocYaml, resourceInit, type Doc, type Value } from "./yamldoc";
import { YamlEditor } from "./yamleditor";

export type Loaded = { resource: Resource; commit: string; proposals: Proposal[] };

type Props = {
  type: TypeRef;
  namespace: string;
  name: string;
  def: ResourceDefinition;
  /** The resource as read; undefined when creating it. */
  loaded?: Loaded;
  canPut: boolean;
  canDelete: boolean;
  /** Reads the resource again (after a write, or to resolve a conflict). */
  onReload: () => void;
  /** A write landed: commit, proposal or delete. */
  onWritten?: (kind: "put" | "delete", result: WriteResult) => void;
};

type Preview = { kind: "put" | "delete"; result: WriteResult };
type Written = { kind: "put" | "delete"; result: WriteResult };
type Conflict = { entry?: HistoryEntry; yours: string };

/** A new resource of the type: its required fields at their least values. */
function skeleton(p: Props, specSchema: any, root: any): Doc {
  return {
    apiVersion: `${p.type.group}/${p.type.version}`,
    kind: p.def.names?.kind ?? "",
    metadata: { name: p.name, namespace: p.namespace },
    spec: specSchema ? initial(specSchema, root) : {},
  };
}

/** Who made a history entry, for people: the requester cup recorded, else the author. */
export function who(e: HistoryEntry): string {
  const author = e.authorEmail ? `${e.authorName} <${e.authorEmail}>` : e.authorName;
  return e.requester && e.requester !== e.authorName ? `${e.requester} (through ${author})` : author || "someone";
}

export function Editor(p: Props) {
  const schema = schemaOf(p.def, p.type.version);
  // The spec's schema: the schema itself, or its spec property when it describes the whole resource.
  const specSchema = schema ? (schema.target === "resource" ? (schema.schema.properties?.spec ?? {}) : schema.schema) : undefined;
  const root = schema?.schema;
  // What the edit starts from: the resource as read, or, when the edit is
  // to go to a proposal's change set, as that branch holds it (its
  // resourceVersion is the precondition there).
  const [onBranch, setOnBranch] = useState<{ branch: string; loaded?: Loaded }>();
  const src = onBranch ? onBranch.loaded : p.loaded;
  const base = useMemo(() => (src ? docOf(src.resource) : skeleton(p, specSchema, root)), [src]);
  const baseRV = src?.resource.metadata?.resourceVersion ?? "";

  const [doc, setDocState] = useState<Doc>(base);
  const [yamlText, setYamlText] = useState(() => docYaml(base));
  const [yamlError, setYamlError] = useState("");
  // The latest document, for edits that build on it before a render.
  const docRef = useRef<Doc>(base);
  /** Sets the document from the form (or a reload): the YAML is written from it. */
  const setDoc = (d: Doc) => {
    docRef.current = d;
    setDocState(d);
    setYamlText(docYaml(d));
    setYamlError("");
  };
  const [serverErrors, setServerErrors] = useState<{ field: string; message: string }[]>([]);
  const [general, setGeneral] = useState<unknown>();
  const [preview, setPreview] = useState<Preview>();
  const [written, setWritten] = useState<Written>();
  const [conflict, setConflict] = useState<Conflict>();
  const [yours, setYours] = useState("");
  const [busy, setBusy] = useState(false);
  // Reading a change set's version: the form waits for it, so no edit is typed into a version about to be replaced.
  const [switching, setSwitching] = useState(false);
  const [message, setMessage] = useState("");
  const changeSet = onBranch?.branch ?? "";
  const [open, setOpen] = useState<Proposal[]>([]);
  const keep = useRef(false);
  const readOnly = !p.canPut;

  // A new version read (a reload, a write): edit it, unless the user asked to keep their edits.
  const loadedKey = `${changeSet}\n${baseRV}\n${src?.commit ?? ""}`;
  const lastKey = useRef(loadedKey);
  // Before paint, so no input lands in the version being replaced.
  useLayoutEffect(() => {
    if (lastKey.current === loadedKey) return;
    lastKey.current = loadedKey;
    setConflict(undefined);
    setPreview(undefined);
    setServerErrors([]);
    setGeneral(undefined);
    if (keep.current) {
      keep.current = false;
      return;
    }
    setDoc(base);
  }, [loadedKey]);

  // Open proposals, to add this edit to one; none without an SCM (FailedPrecondition).
  useEffect(() => {
    if (readOnly) return;
    let live = true;
    proposalClient.listProposals({ state: ProposalState.OPEN }).then(
      (r) => live && setOpen(r.proposals),
      () => live && setOpen([]),
    );
    return () => {
      live = false;
    };
  }, [readOnly, written]);

  const clientErrors = useMemo(() => (specSchema ? check(specSchema, doc.spec, ["spec"], root) : new Map<string, string[]>()), [doc]);
  const shown = useMemo(() => {
    const s = specSchema ? fieldPaths(specSchema, doc.spec, ["spec"], root) : new Set<string>(["spec"]);
    s.add("metadata.labels");
    s.add("metadata.annotations");
    return s;
  }, [doc]);
  // The server's violations on the fields they name (or the nearest one shown); the rest in a box.
  const { errors, unmatched } = useMemo(() => {
    const m = new Map<string, string[]>();
    for (const [k, v] of clientErrors) m.set(k, [...v]);
    const rest: { field: string; message: string }[] = [];
    for (const v of serverErrors) {
      const f = nearestField(v.field, shown);
      if (!f) {
        rest.push(v);
        continue;
      }
      const msg = f === v.field ? v.message : `${v.field.slice(f.length).replace(/^\./, "")}: ${v.message}`;
      m.set(f, [...(m.get(f) ?? []), msg]);
    }
    return { errors: m, unmatched: rest };
  }, [clientErrors, serverErrors, shown]);

  const changed = () => {
    setPreview(undefined);
    setWritten(undefined);
  };

  const edit = (at: Path, fn: (old: Value | undefined) => Value | undefined) => {
    const d = docRef.current;
    setDoc({ ...d, spec: updateIn(d.spec, at.slice(1), fn) });
    // The server's word on this field is stale once it is edited.
    const prefix = pathText(at);
    setServerErrors((errs) => errs.filter((e) => !(e.field === prefix || e.field.startsWith(prefix + ".") || e.field.startsWith(prefix + "["))));
    changed();
  };
  const setMeta = (key: "labels" | "annotations", m: Record<string, string> | undefined) => {
    const d = docRef.current;
    const metadata = { ...d.metadata };
    if (m) metadata[key] = m;
    else delete metadata[key];
    setDoc({ ...d, metadata });
    setServerErrors((errs) => errs.filter((e) => !e.field.startsWith(`metadata.${key}`)));
    changed();
  };
  const onYaml = (text: string) => {
    setYamlText(text);
    try {
      const d = parseDocYaml(text);
      setYamlError("");
      // The YAML stays as typed; the form follows.
      docRef.current = d;
      setDocState(d);
      changed();
    } catch (err) {
      setYamlError(err instanceof Error ? err.message : String(err));
    }
  };

  const target = { group: p.type.group, version: p.type.version, plural: p.type.plural, namespace: p.namespace, name: p.name };

  async function fail(err: unknown) {
    if (errorCode(err) === Code.Aborted) {
      // Stale resourceVersion: say who changed it, from the newest history entry.
      setPreview(undefined); // its diff is against a version that is gone
      const h = await resources.history({ ...target, until: changeSet, pageSize: 1 }).catch(() => undefined);
      setConflict({ entry: h?.entries[0], yours: yamlText });
      return;
    }
    const v = violations(err);
    if (v.length > 0) {
      setServerErrors(v);
      return;
    }
    setGeneral(err);
  }

  async function run(what: () => Promise<void>) {
    setBusy(true);
    setGeneral(undefined);
    setConflict(undefined);
    setServerErrors([]);
    try {
      await what();
    } catch (err) {
      await fail(err);
    } finally {
      setBusy(false);
    }
  }

  const putRequest = (dryRun: boolean) => ({
    ...target,
    resource: resourceInit(doc),
    resourceVersion: baseRV,
    dryRun,
    message: dryRun ? "" : message.trim(),
    changeSet,
  });
  const deleteRequest = (dryRun: boolean) => ({ ...target, resourceVersion: baseRV, dryRun, message: dryRun ? "" : message.trim(), changeSet });

  const dryRun = () =>
    run(async () => {
      setWritten(undefined);
      const r = await resources.put(putRequest(true));
      setPreview({ kind: "put", result: r.result! });
    });
  const save = () =>
    run(async () => {
      const r = await resources.put(putRequest(false));
      setPreview(undefined);
      setWritten({ kind: "put", result: r.result! });
      setMessage("");
      // Written to a change set: its new version is the base of the next edit there.
      if (changeSet && r.resource) setOnBranch({ branch: changeSet, loaded: { resource: r.resource, commit: r.result?.commit ?? "", proposals: [] } });
      p.onWritten?.("put", r.result!);
    });
  const dryDelete = () =>
    run(async () => {
      setWritten(undefined);
      const r = await resources.delete(deleteRequest(true));
      setPreview({ kind: "delete", result: r.result! });
    });
  const doDelete = () =>
    run(async () => {
      const r = await resources.delete(deleteRequest(false));
      setPreview(undefined);
      setWritten({ kind: "delete", result: r.result! });
      p.onWritten?.("delete", r.result!);
    });

  const reload = (keepEdits: boolean) => {
    setYours(conflict?.yours ?? yamlText);
    keep.current = keepEdits;
    setConflict(undefined);
    if (changeSet) pickChangeSet(changeSet, false);
    else p.onReload();
  };

  /** Edit what a change set holds (or, with "", the resource as read): read it there first. */
  async function pickChangeSet(branch: string, keepAside = true) {
    if (keepAside && docYaml(docRef.current) !== docYaml(base)) setYours(yamlText);
    if (!branch) {
      setOnBranch(undefined);
      return;
    }
    setBusy(true);
    setSwitching(true);
    try {
      const r = await resources.get({ ...target, revision: branch });
      setOnBranch({ branch, loaded: { resource: r.resource!, commit: r.commit, proposals: r.proposals } });
    } catch (err) {
      // Not in the change set (deleted there): writing creates it again.
      if (errorCode(err) === Code.NotFound) setOnBranch({ branch });
      else setGeneral(err);
    } finally {
      setBusy(false);
      setSwitching(false);
    }
  }

  const dirty = docYaml(doc) !== docYaml(base);
  const blocked = !!yamlError || clientErrors.size > 0;
  const touching = new Set(p.loaded?.proposals.map((x) => x.id) ?? []);
  const offered = [...open].sort((a, b) => Number(touching.has(b.id)) - Number(touching.has(a.id)));

  return (
    <div class="rv-editor">
      <form
        class="split"
        onSubmit={(e) => {
          e.preventDefault();
          if (!readOnly && !blocked && !busy) dryRun();
        }}
        noValidate
        aria-label={`Edit ${p.name}`}
      >
        <div class="rv-form">
          <h2 class="rv-h">Form</h2>
          {specSchema ? (
            <SchemaForm schema={specSchema} root={root} value={doc.spec} at={["spec"]} label="spec" edit={edit} errors={errors} readOnly={readOnly || switching} />
          ) : (
            <p class="notice">This type has no schema: edit its spec in the YAML.</p>
          )}
          <fieldset class="sf-object rv-meta-edit" data-testid="field-metadata.labels" aria-invalid={errors.has("metadata.labels") ? "true" : undefined}>
            <legend>Labels</legend>
            {errors.has("metadata.labels") && <span class="field-error">{errors.get("metadata.labels")!.join("; ")}</span>}
            <KeyValues id="labels" testid="labels" name="labels" value={doc.metadata.labels} readOnly={readOnly || switching} onChange={(m) => setMeta("labels", m)} />
          </fieldset>
          <fieldset class="sf-object rv-meta-edit" data-testid="field-metadata.annotations" aria-invalid={errors.has("metadata.annotations") ? "true" : undefined}>
            <legend>Annotations</legend>
            {errors.has("metadata.annotations") && <span class="field-error">{errors.get("metadata.annotations")!.join("; ")}</span>}
            <KeyValues
              id="annotations"
              testid="annotations"
              name="annotations"
              multiline
              value={doc.metadata.annotations}
              readOnly={readOnly || switching}
              onChange={(m) => setMeta("annotations", m)}
            />
          </fieldset>
        </div>
        <div class="rv-yamlcol">
          <h2 class="rv-h">YAML</h2>
          <YamlEditor id="rv-yaml" label="The whole resource" text={yamlText} error={yamlError} readOnly={readOnly || switching} onText={onYaml} />
          {yamlError && <p class="help">The form shows the last YAML that parsed; fix the YAML to go on.</p>}
        </div>
      </form>

      {unmatched.length > 0 && (
        <div class="error" role="alert" data-testid="server-errors">
          <span>The server refused the change:</span>
          <ul>
            {unmatched.map((v, i) => (
              <li key={i}>
                <code>{v.field}</code>: {v.message}
              </li>
            ))}
          </ul>
        </div>
      )}
      {serverErrors.length > unmatched.length && (
        <p class="error" role="alert" data-testid="field-errors-note">
          The server refused the change: {serverErrors.length - unmatched.length === 1 ? "one problem is" : `${serverErrors.length - unmatched.length} problems are`} marked on the
          form.
        </p>
      )}
      {general !== undefined && <ErrorBox error={general} />}

      {conflict && (
        <div class="error rv-conflict" role="alert" data-testid="conflict">
          <p>
            <strong>{p.name} changed since you loaded it.</strong>{" "}
            {conflict.entry ? (
              <>
                <span data-testid="conflict-who">{who(conflict.entry)}</span> changed it in <Commit sha={conflict.entry.commit} />{" "}
                <Ago date={dateOf(conflict.entry.time)} /> ago
                {conflict.entry.subject && (
                  <>
                    : “<span>{conflict.entry.subject}</span>”
                  </>
                )}
                .
              </>
            ) : (
              <>Its history could not be read to say who changed it.</>
            )}
          </p>
          <p>Reload to see the new version. Your edits stay below either way, so nothing is lost.</p>
          <div class="rv-actions">
            <button type="button" data-testid="reload" onClick={() => reload(false)}>
              Reload
            </button>
            <button type="button" class="secondary" data-testid="reload-keep" onClick={() => reload(true)}>
              Reload, keep my edits in the editor
            </button>
          </div>
        </div>
      )}
      {yours && (
        <div class="notice rv-yours">
          <YamlEditor id="rv-yours" label="Your edits (kept from before the reload)" text={yours} readOnly testid="your-edits" rows={8} />
          <div class="rv-actions">
            <button
              type="button"
              class="secondary"
              data-testid="use-edits"
              onClick={() => {
                onYaml(yours);
              }}
            >
              Put them back into the editor
            </button>
            <button type="button" class="secondary" onClick={() => setYours("")}>
              Dismiss
            </button>
          </div>
        </div>
      )}

      {!readOnly && (
        <div class="rv-save">
          <div class="toolbar">
            <label class="rv-message">
              <span>Commit message</span>
              <input
                type="text"
                data-testid="message"
                value={message}
                placeholder={`Put ${p.def.names?.kind ?? ""} ${p.namespace}/${p.name}`}
                maxLength={65536}
                onInput={(e) => setMessage((e.currentTarget as HTMLInputElement).value)}
              />
            </label>
            {offered.length > 0 && (
              <label>
                <span>Write to</span>
                <select data-testid="change-set" value={changeSet} disabled={busy} onChange={(e) => pickChangeSet((e.currentTarget as HTMLSelectElement).value)}>
                  <option value="">A new change (as cupd writes)</option>
                  {offered.map((x) => (
                    <option key={x.id} value={x.branch}>
                      Add to proposal #{x.id}: {x.title}
                      {touching.has(x.id) ? " (changes this resource)" : ""}
                    </option>
                  ))}
                </select>
              </label>
            )}
          </div>
          {onBranch && (
            <p class="notice" data-testid="on-branch" role="status">
              The form and the YAML hold {p.name} as the change set <code>{onBranch.branch}</code> has it
              {onBranch.loaded ? "" : " (it has no such resource: saving creates it there)"}; saving adds a commit to it.
            </p>
          )}
          <div class="rv-actions">
            <button type="button" data-testid="dry-run" disabled={blocked || busy} onClick={dryRun}>
              Review changes
            </button>
            {dirty && (
              <button
                type="button"
                class="secondary"
                data-testid="discard"
                disabled={busy}
                onClick={() => {
                  setDoc(base);
                  setServerErrors([]);
                  changed();
                }}
              >
                Discard my edits
              </button>
            )}
            {p.canDelete && src && (
              <button type="button" class="secondary rv-delete" data-testid="delete" disabled={busy} onClick={dryDelete}>
                Delete…
              </button>
            )}
            {busy && (
              <span class="muted" role="status">
                Asking cupd…
              </span>
            )}
            {blocked && !busy && (
              <span class="help">
                {yamlError ? "Fix the YAML first." : `Fix the ${clientErrors.size === 1 ? "field" : `${clientErrors.size} fields`} marked first.`}
              </span>
            )}
          </div>
        </div>
      )}

      {preview && (
        <section class="rv-preview" aria-label="What the write would change" data-testid="preview">
          <h2 class="rv-h">{preview.kind === "delete" ? `Delete ${p.name}?` : "What saving would change"}</h2>
          {preview.result.outcome === WriteOutcome.UNCHANGED ? (
            <p class="notice" data-testid="diff" data-empty="true">
              No changes: saving would write nothing.
            </p>
          ) : (
            <Changes changes={preview.result.changes} />
          )}
          {preview.result.branch && (
            <p class="muted">
              On branch <code>{preview.result.branch}</code>, from commit <Commit sha={preview.result.baseCommit} />.
            </p>
          )}
          <div class="rv-actions">
            {preview.kind === "put" ? (
              <button type="button" data-testid="save" disabled={busy || blocked || preview.result.outcome === WriteOutcome.UNCHANGED} onClick={save}>
                Save
              </button>
            ) : (
              <button type="button" class="danger" data-testid="confirm-delete" disabled={busy} onClick={doDelete}>
                Delete {p.name}
              </button>
            )}
            <button type="button" class="secondary" data-testid="cancel" onClick={() => setPreview(undefined)}>
              {preview.kind === "delete" ? "Keep it" : "Keep editing"}
            </button>
          </div>
        </section>
      )}

      {written && <WrittenNote written={written} />}
    </div>
  );
}

/** What a write did: the commit, or the proposal it is under review in. */
export function WrittenNote(props: { written: Written; what?: string }) {
  const r = props.written.result;
  const p = r.proposal;
  return (
    <div class="notice rv-written" role="status" data-testid="result">
      {r.outcome === WriteOutcome.UNCHANGED ? (
        <>Nothing changed: nothing was written.</>
      ) : p ? (
        <>
          {props.what ?? (props.written.kind === "delete" ? "Deletion" : "Change")} proposed in{" "}
          <span data-testid="proposal-link">
            <OutLink url={p.url}>#{p.id}</OutLink>
          </span>
          {p.title && (
            <>
              {" "}
              (<span>{p.title}</span>)
            </>
          )}{" "}
          on branch <code data-testid="branch">{r.branch}</code>
          {r.commit && (
            <>
              , commit{" "}
              <span data-testid="commit">
                <Commit sha={r.commit} />
              </span>
            </>
          )}
          .
        </>
      ) : (
        <>
          {props.what ?? (props.written.kind === "delete" ? "Deleted" : "Saved")} in commit{" "}
          <span data-testid="commit">
            <Commit sha={r.commit} />
          </span>{" "}
          on <code data-testid="branch">{r.branch}</code>.
        </>
      )}
    </div>
  );
}
