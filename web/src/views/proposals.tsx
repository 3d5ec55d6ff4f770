// Proposals cup opened: open, merged and closed, with their resources and links.
// Titles, branches and URLs come from the SCM and from whoever wrote to the
// repository: text only, and links out only for http(s).
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { ProposalState, type Proposal, type ResourceRef } from "@cup-dev/api/cup/v1alpha1/proposal_pb.js";

import { errorCode, proposals, Code } from "../api";
import { Ago, ErrorBox, Link, Loading, OutLink } from "../components/common";
import { base, resourcePath, setQuery } from "../route";
import { useLoad } from "../store";
import { useSignInRedirect } from "./viewutil";
import "./proposals.css";

const states: { value: string; label: string; state: ProposalState }[] = [
  { value: "open", label: "Open", state: ProposalState.OPEN },
  { value: "merged", label: "Merged", state: ProposalState.MERGED },
  { value: "closed", label: "Closed", state: ProposalState.CLOSED },
  { value: "all", label: "All", state: ProposalState.UNSPECIFIED },
];

function stateName(s: ProposalState): string {
  switch (s) {
    case ProposalState.OPEN:
      return "open";
    case ProposalState.MERGED:
      return "merged";
    case ProposalState.CLOSED:
      return "closed";
    default:
      return "unknown";
  }
}

function date(t: Timestamp | undefined): Date | undefined {
  return t ? timestampDate(t) : undefined;
}

/** Without an SCM cupd answers every proposal call with FailedPrecondition. */
function NoSCM() {
  return (
    <p class="notice" data-testid="no-scm">
      cupd runs without an SCM: writes are commits, not proposals.
    </p>
  );
}

function StateChip(props: { p: Proposal }) {
  const s = stateName(props.p.state);
  return (
    <span class={`chip state state-${s}`} data-testid="state">
      {s}
      {props.p.draft ? " (draft)" : ""}
    </span>
  );
}

function ResourceLink(props: { r: ResourceRef }) {
  const r = props.r;
  const text = `${r.kind || r.plural} ${r.namespace}/${r.name}`;
  if (!r.group || !r.version || !r.plural || !r.namespace || !r.name) return <span>{text}</span>;
  return <Link href={resourcePath(r, r.namespace, r.name)}>{text}</Link>;
}

function Resources(props: { list: ResourceRef[] }) {
  if (props.list.length === 0) return <span class="muted">—</span>;
  return (
    <ul class="proposal-resources">
      {props.list.map((r, i) => (
        <li key={i}>
          <ResourceLink r={r} />
        </li>
      ))}
    </ul>
  );
}

function Branches(props: { p: Proposal }) {
  return (
    <span class="branches">
      <code>{props.p.branch || "?"}</code> → <code>{props.p.base || "?"}</code>
    </span>
  );
}

function Detail(props: { id: string }) {
  const got = useLoad(() => proposals.getProposal({ id: props.id }), [props.id]);
  useSignInRedirect(got.error);
  const p = got.data?.proposal;
  return (
    <>
      <h1 tabIndex={-1}>Proposal #{props.id}</h1>
      <p>
        <Link href={`${base}/proposals`}>All proposals</Link>
      </p>
      {got.loading && !got.data && <Loading what="the proposal" />}
      {got.error !== undefined &&
        (errorCode(got.error) === Code.FailedPrecondition ? <NoSCM /> : <ErrorBox error={got.error} onRetry={got.reload} />)}
      {p && (
        <section data-testid={`proposal-${p.id}`} class="proposal-detail">
          <h2 data-testid="title">{p.title || "(no title)"}</h2>
          <dl class="meta">
            <dt>State</dt>
            <dd>
              <StateChip p={p} />
            </dd>
            <dt>Branch</dt>
            <dd>
              <Branches p={p} />
            </dd>
            <dt>Provider</dt>
            <dd>{p.provider || <span class="muted">—</span>}</dd>
            <dt>Created</dt>
            <dd>
              <Ago date={date(p.createTime)} />
            </dd>
            <dt>Updated</dt>
            <dd>
              <Ago date={date(p.updateTime)} />
            </dd>
            <dt>Resources</dt>
            <dd>
              <Resources list={p.resources} />
            </dd>
            <dt>Link</dt>
            <dd data-testid="link">
              <OutLink url={p.url}>{p.url || "—"}</OutLink>
            </dd>
          </dl>
        </section>
      )}
    </>
  );
}

function List(props: { query: URLSearchParams }) {
  const value = props.query.get("state") ?? "open";
  const state = states.find((s) => s.value === value) ?? states[0];
  const got = useLoad(() => proposals.listProposals({ state: state.state }), [state.value]);
  useSignInRedirect(got.error);
  const noSCM = got.error !== undefined && errorCode(got.error) === Code.FailedPrecondition;
  const list = got.data?.proposals ?? [];
  return (
    <>
      <h1 tabIndex={-1}>Proposals</h1>
      <p class="muted">The pull or merge requests cup opened for writes, newest first.</p>
      <div class="toolbar">
        <label>
          State
          <select
            data-testid="state-select"
            value={state.value}
            onChange={(e) => setQuery({ state: (e.currentTarget as HTMLSelectElement).value }, false)}
          >
            {states.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {got.loading && !got.data && <Loading what="proposals" />}
      {noSCM && <NoSCM />}
      {got.error !== undefined && !noSCM && <ErrorBox error={got.error} onRetry={got.reload} />}
      {got.data && (
        <>
          <p class="muted" data-testid="count">
            {list.length === 0
              ? `No ${state.value === "all" ? "" : `${state.value} `}proposals.`
              : `${list.length} ${state.value === "all" ? "" : `${state.value} `}${list.length === 1 ? "proposal" : "proposals"}.`}
          </p>
          {list.length > 0 && (
            <div class="table-wrap">
              <table data-testid="proposals">
                <caption class="visually-hidden">Proposals</caption>
                <thead>
                  <tr>
                    <th scope="col">#</th>
                    <th scope="col">Title</th>
                    <th scope="col">State</th>
                    <th scope="col">Branch → base</th>
                    <th scope="col">Provider</th>
                    <th scope="col">Created</th>
                    <th scope="col">Updated</th>
                    <th scope="col">Resources</th>
                    <th scope="col">Link</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((p) => (
                    <tr key={p.id} data-testid={`proposal-${p.id}`}>
                      <th scope="row">
                        <Link href={`${base}/proposals/${encodeURIComponent(p.id)}`}>#{p.id}</Link>
                      </th>
                      <td data-testid="title">{p.title || <span class="muted">(no title)</span>}</td>
                      <td>
                        <StateChip p={p} />
                      </td>
                      <td>
                        <Branches p={p} />
                      </td>
                      <td>{p.provider || <span class="muted">—</span>}</td>
                      <td>
                        <Ago date={date(p.createTime)} />
                      </td>
                      <td>
                        <Ago date={date(p.updateTime)} />
                      </td>
                      <td>
                        <Resources list={p.resources} />
                      </td>
                      <td data-testid="link">
                        <OutLink url={p.url}>{p.provider ? `on ${p.provider}` : "link"}</OutLink>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}

export function ProposalsView(props: { id: string; query: URLSearchParams }) {
  return props.id ? <Detail id={props.id} /> : <List query={props.query} />;
}
