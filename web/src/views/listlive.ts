// A page of a type's resources kept live: List at a commit, then Watch from
// that commit and apply each change to the rows shown. Only one page is ever
// held; a change to a resource that sorts outside the page is ignored.
import type { Resource } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";
import { WatchEventType } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";
import { useEffect, useRef, useState } from "preact/hooks";

import { Code, ConnectError, errorCode, errorText, resources } from "../api";
import { useToken } from "../store";
import { cmp } from "./viewutil";

export type ListParams = {
  group: string;
  version: string;
  plural: string;
  /** "" for every namespace. */
  namespace: string;
  labelSelector: string;
  pageSize: number;
  /** "" for the first page. */
  pageToken: string;
};

/**
 * A row: the resource, when it last changed (ms since the epoch; from the
 * listing's with_changes, or the arrival of the event that changed it; 0
 * when unknown), and until when it flashes (a change just landed).
 */
export type Row = { key: string; resource: Resource; changed: number; flashUntil: number; flashes: number };

export type LiveState = "off" | "connecting" | "live" | "retrying";

export type ListState = {
  loading: boolean;
  error?: unknown;
  rows: Row[];
  /** The commit the page was listed at. */
  commit: string;
  nextPageToken: string;
  /** Files the listing left out (warnings plus more_warnings). */
  problems: number;
  live: LiveState;
  /** A short note about the live updates (an interruption, a re-list). */
  notice: string;
  /** Resources that landed on the page after it was listed, beyond its size, not shown. */
  overflow: number;
};

/** How long a changed row keeps its "flash" class. */
export const flashMs = 1500;

/** Sort key of a resource: namespace, then name (as cupd sorts listings). */
export function rowKey(r: Resource): string {
  return `${r.metadata?.namespace ?? ""}\u0000${r.metadata?.name ?? ""}`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** Index of key in rows (sorted), or where it would go as -(i + 1). */
function search(rows: Row[], key: string): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const c = cmp(rows[mid].key, key);
    if (c === 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -(lo + 1);
}

/**
 * The page's bounds: a new resource joins the rows only if it sorts within
 * them. The first page has no lower bound, the last no upper one. (A later
 * page's lower bound is its first row: a resource sorting between the
 * previous page's last row and it is left to a re-list.)
 */
type Bounds = { lower?: string; upper?: string };

function inBounds(b: Bounds, key: string): boolean {
  return (b.lower === undefined || cmp(key, b.lower) >= 0) && (b.upper === undefined || cmp(key, b.upper) <= 0);
}

/** The rows after a watch event, or the same array when nothing on the page changed. */
export function applyEvent(rows: Row[], b: Bounds, type: WatchEventType, r: Resource | undefined, now: number): Row[] {
  if (!r?.metadata || type === WatchEventType.BOOKMARK) return rows;
  const key = rowKey(r);
  const i = search(rows, key);
  if (type === WatchEventType.DELETED) {
    if (i < 0) return rows;
    return [...rows.slice(0, i), ...rows.slice(i + 1)];
  }
  if (type !== WatchEventType.ADDED && type !== WatchEventType.MODIFIED) return rows;
  if (i >= 0) {
    const out = rows.slice();
    out[i] = { key, resource: r, changed: now, flashUntil: now + flashMs, flashes: rows[i].flashes + 1 };
    return out;
  }
  if (!inBounds(b, key)) return rows;
  const at = -i - 1;
  return [...rows.slice(0, at), { key, resource: r, changed: now, flashUntil: now + flashMs, flashes: 1 }, ...rows.slice(at)];
}

/**
 * Lists one page and keeps it live. On a watch that ends (with an error or
 * not) it says so and watches again from the last event, backing off; when
 * cupd no longer knows that commit (FailedPrecondition) it lists again. It
 * aborts everything when the parameters change or the view goes away.
 */
export function useLiveList(p: ListParams, reloads: number, onLostPage: () => void): ListState {
  const token = useToken();
  const [state, setState] = useState<ListState>({
    loading: true,
    rows: [],
    commit: "",
    nextPageToken: "",
    problems: 0,
    live: "off",
    notice: "",
    overflow: 0,
  });
  const lost = useRef(onLostPage);
  lost.current = onLostPage;
  const key = JSON.stringify(p);

  useEffect(() => {
    const ac = new AbortController();
    const signal = ac.signal;
    const set = (f: (s: ListState) => ListState) => {
      if (!signal.aborted) setState(f);
    };
    setState((s) => ({ ...s, loading: true, error: undefined, rows: [], notice: "", live: "off", overflow: 0 }));

    // Rows beyond the page size are held (they belong to this page, by the
    // bounds) but not shown: a page never renders more than pageSize rows.
    const shown = (rows: Row[]) => ({ rows, overflow: Math.max(0, rows.length - p.pageSize) });

    (async () => {
      let relists = 0;
      for (;;) {
        let res;
        try {
          res = await resources.list(
            {
              group: p.group,
              version: p.version,
              plural: p.plural,
              namespace: p.namespace,
              labelSelector: p.labelSelector,
              pageSize: p.pageSize,
              pageToken: p.pageToken,
              withChanges: true,
            },
            { signal },
          );
        } catch (error) {
          set((s) => ({ ...s, loading: false, error, rows: [], live: "off" }));
          return;
        }
        const rows: Row[] = res.items.map((r, i) => {
          const changed = Date.parse(res.changes[i]?.time ?? "");
          return { key: rowKey(r), resource: r, changed: Number.isNaN(changed) ? 0 : changed, flashUntil: 0, flashes: 0 };
        });
        rows.sort((a, b) => cmp(a.key, b.key));
        const bounds: Bounds = {
          lower: p.pageToken && rows.length ? rows[0].key : undefined,
          upper: res.nextPageToken && rows.length ? rows[rows.length - 1].key : undefined,
        };
        set((s) => ({
          ...s,
          loading: false,
          error: undefined,
          ...shown(rows),
          commit: res.commit,
          nextPageToken: res.nextPageToken,
          problems: res.warnings.length + res.moreWarnings,
          live: "connecting",
          notice: relists > 0 ? s.notice : "",
        }));

        // Watch from the listing's commit; resume from the last event.
        let from = res.commit;
        let backoff = 1000;
        let relist = false;
        while (!signal.aborted) {
          try {
            const stream = resources.watch(
              {
                group: p.group,
                version: p.version,
                plural: p.plural,
                namespace: p.namespace,
                labelSelector: p.labelSelector,
                revision: from,
                allowBookmarks: true,
              },
              { signal },
            );
            for await (const ev of stream) {
              if (ev.resumeRevision) from = ev.resumeRevision;
              else if (ev.commit) from = ev.commit;
              backoff = 1000;
              const at = Date.now();
              set((s) => {
                const all = applyEvent(s.rows, bounds, ev.type, ev.resource, at);
                const live = s.live === "live" && !s.notice;
                if (all === s.rows && live) return s;
                return { ...s, ...shown(all), live: "live", notice: "" };
              });
            }
            throw new ConnectError("the watch ended", Code.Unavailable);
          } catch (err) {
            if (signal.aborted) return;
            const code = errorCode(err);
            if (code === Code.FailedPrecondition) {
              relist = true;
              break;
            }
            if (code === Code.Unauthenticated || code === Code.PermissionDenied || code === Code.InvalidArgument || code === Code.Unimplemented) {
              set((s) => ({ ...s, live: "off", notice: `Live updates are off: ${errorText(err)}` }));
              return;
            }
            const secs = Math.round(backoff / 1000);
            set((s) => ({ ...s, live: "retrying", notice: `Live updates were interrupted (${errorText(err)}); trying again in ${secs} s.` }));
            await sleep(backoff, signal);
            backoff = Math.min(backoff * 2, 30_000);
          }
        }
        if (!relist || signal.aborted) return;
        // The commit is gone from the branch's history (a force-push, say).
        // A later page's token pins that commit too: go back to the first page.
        if (p.pageToken) {
          lost.current();
          return;
        }
        relists++;
        set((s) => ({ ...s, live: "retrying", notice: "The branch's history changed; listing again." }));
        await sleep(Math.min(1000 * 2 ** (relists - 1), 30_000), signal);
        if (signal.aborted) return;
      }
    })();
    return () => ac.abort();
  }, [key, reloads, token]);

  // Take the "flash" class off rows once their moment has passed.
  const [ticks, tick] = useState(0);
  useEffect(() => {
    const now = Date.now();
    const next = state.rows.reduce((m, r) => (r.flashUntil > now && r.flashUntil < m ? r.flashUntil : m), Infinity);
    if (next === Infinity) return;
    const t = setTimeout(() => tick((n) => n + 1), next - now + 20);
    return () => clearTimeout(t);
  }, [state.rows, ticks]);

  return state;
}
