// Uses the generated package's ResourceService.Watch, a server-streaming RPC,
// as an async iterable against a real cupd (started here with `go run
// ./cmd/cupd serve`), over the Connect and gRPC-Web protocols: the initial
// state, live changes, resuming after an abort, and an unknown revision.
//
// Every wait is bounded: a step that gets no event in time aborts its call
// and fails, so the test never hangs.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ResourceService, WatchEventType, WriteOutcome } from "@cup-dev/api/cup/v1alpha1/resource_pb";

import { startCupd } from "./cupd.js";

const flags = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default" };
const commitRe = /^[0-9a-f]{40}$/;
const unknownCommit = "0123456789abcdef0123456789abcdef01234567";

/** How long one step may wait for its events. */
const stepTimeoutMs = 20_000;

/**
 * Runs fn, which reads from a watch that ac aborts, for at most ms: then ac is
 * aborted (ending the call) and the step fails naming what it waited for.
 */
async function within(ms, ac, what, fn) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`timed out after ${ms} ms waiting for ${what}`);
      ac.abort(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([fn(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The next event of the watch iterator it, within stepTimeoutMs. */
async function next(it, ac, what) {
  const res = await within(stepTimeoutMs, ac, what, () => it.next());
  assert.equal(res.done, false, `the watch ended while waiting for ${what}`);
  return res.value;
}

/** A short description of an event, for assertion messages. */
function show(ev) {
  return `${WatchEventType[ev.type]} ${ev.resource?.metadata?.name ?? "-"} @${ev.commit}`;
}

describe("Watch against cupd (go run ./cmd/cupd serve)", () => {
  let cupd;
  // Every watch's controller, aborted in after() should a step leave one open.
  const controllers = [];
  before(async () => {
    cupd = await startCupd();
  });
  after(async () => {
    for (const ac of controllers) ac.abort();
    await cupd?.stop();
  });

  function newController() {
    const ac = new AbortController();
    controllers.push(ac);
    return ac;
  }

  const transports = {
    connect: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    "grpc-web": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
  };

  // The protocols run one after the other on the same cupd, so each puts
  // its own rollout values, and the set of flags stays the demo's.
  let rollout = 10;

  for (const [name, newTransport] of Object.entries(transports)) {
    describe(`over ${name}`, () => {
      let resources;
      before(() => {
        resources = createClient(ResourceService, newTransport(cupd.baseUrl));
      });

      /** Puts new-checkout with a rollout not used before; returns it and the commit. */
      async function putRollout(what) {
        const value = ++rollout;
        const put = await resources.put({
          ...flags,
          name: "new-checkout",
          resource: {
            metadata: { labels: { team: "payments" } },
            spec: { description: `The redesigned checkout flow (${what}).`, enabled: true, rollout: value },
          },
        });
        assert.equal(put.result?.outcome, WriteOutcome.COMMITTED);
        assert.match(put.result?.commit ?? "", commitRe);
        return { rollout: value, commit: put.result.commit };
      }

      it("sends the initial state, live changes, and resumes after an abort", async () => {
        const listed = await resources.list(flags);

        // (1) The current state: ADDED events, then the initial-events-end BOOKMARK.
        const ac = newController();
        const it = resources.watch(flags, { signal: ac.signal })[Symbol.asyncIterator]();
        const added = [];
        let bookmark;
        while (!bookmark) {
          const ev = await next(it, ac, "the initial events and their BOOKMARK");
          if (ev.type === WatchEventType.BOOKMARK) {
            bookmark = ev;
            break;
          }
          assert.equal(ev.type, WatchEventType.ADDED, `an initial event is not ADDED: ${show(ev)}`);
          assert.equal(ev.resource?.metadata?.namespace, "default");
          assert.equal(ev.resource?.kind, "Flag");
          added.push(ev.resource?.metadata?.name);
        }
        assert.deepEqual(added.sort(), ["dark-mode", "new-checkout", "search-v2"]);
        assert.equal(bookmark.initialEventsEnd, true);
        assert.equal(bookmark.resource, undefined);
        assert.match(bookmark.commit, commitRe);
        assert.equal(bookmark.resumeRevision, bookmark.commit);
        // The initial state is the state at the bookmark's commit. That commit is
        // the head the watch started at: the demo's reconciler may have committed
        // a flag bundle since the list above, so it need not be listed.commit,
        // but the flags there are the listed ones, at the same versions.
        const atBookmark = await resources.list({ ...flags, revision: bookmark.commit });
        const versions = (res) => res.items.map((r) => `${r.metadata?.name}@${r.metadata?.resourceVersion}`).sort();
        assert.deepEqual(versions(atBookmark), versions(listed), "the initial state is not the listed one");

        // (2) A put through the same client arrives as MODIFIED, at the put's commit.
        const first = await putRollout("first");
        const modified = await next(it, ac, "the MODIFIED event of the first put");
        assert.equal(modified.type, WatchEventType.MODIFIED, show(modified));
        assert.equal(modified.resource?.metadata?.name, "new-checkout");
        assert.equal(modified.resource?.spec?.rollout, first.rollout);
        assert.equal(modified.commit, first.commit);
        assert.equal(modified.initialEventsEnd, false);
        assert.equal(modified.resumeRevision, first.commit);

        // (3) Abort the watch: its iterator ends with Canceled.
        ac.abort();
        await assert.rejects(
          within(stepTimeoutMs, new AbortController(), "the aborted watch to end", () => it.next()),
          (err) => {
            assert.equal(ConnectError.from(err).code, Code.Canceled, String(err));
            return true;
          },
        );

        // ... resume from the last event's resumeRevision, and put another change:
        // exactly that change arrives, not the first one again.
        const ac2 = newController();
        const resumed = resources.watch(
          { ...flags, revision: modified.resumeRevision },
          { signal: ac2.signal },
        )[Symbol.asyncIterator]();
        // It says where it starts: a BOOKMARK at the revision it resumes from.
        const start = await next(resumed, ac2, "the BOOKMARK that starts the resumed watch");
        assert.equal(start.type, WatchEventType.BOOKMARK, show(start));
        assert.equal(start.resumeRevision, modified.resumeRevision);
        const pending = next(resumed, ac2, "the MODIFIED event of the second put");
        pending.catch(() => {}); // awaited below; no unhandled rejection while the put runs
        const second = await putRollout("second");
        const ev = await pending;
        assert.equal(ev.type, WatchEventType.MODIFIED, show(ev));
        assert.equal(ev.resource?.metadata?.name, "new-checkout");
        assert.equal(ev.resource?.spec?.rollout, second.rollout, `the first change came again: ${show(ev)}`);
        assert.equal(ev.commit, second.commit);
        assert.equal(ev.resumeRevision, second.commit);

        // A third change is the very next event: nothing else came between.
        const third = await putRollout("third");
        const ev3 = await next(resumed, ac2, "the MODIFIED event of the third put");
        assert.equal(ev3.type, WatchEventType.MODIFIED, show(ev3));
        assert.equal(ev3.commit, third.commit);
        assert.equal(ev3.resource?.spec?.rollout, third.rollout);
        ac2.abort();
      });

      it("ends a watch from an unknown revision with FailedPrecondition", async () => {
        const ac = newController();
        const events = [];
        await assert.rejects(
          within(stepTimeoutMs, ac, "the unknown revision's error", async () => {
            for await (const ev of resources.watch({ ...flags, revision: unknownCommit }, { signal: ac.signal })) {
              events.push(show(ev));
            }
          }),
          (err) => {
            assert.ok(err instanceof ConnectError, `not a ConnectError: ${err}`);
            assert.equal(err.code, Code.FailedPrecondition, err.message);
            assert.match(err.rawMessage, /not in the first-parent history/);
            return true;
          },
        );
        assert.deepEqual(events, [], "events came before the error");
      });
    });
  }
});
