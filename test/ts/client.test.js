// Uses the generated package as a Connect client against a real cupd (started
// here with `go run ./cmd/cupd serve`), over the Connect, gRPC-Web and gRPC
// protocols.
import assert from "node:assert/strict";
import diagnostics_channel from "node:diagnostics_channel";
import { after, before, describe, it } from "node:test";

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import { DiscoveryService, EdgeKind } from "@cup-dev/api/cup/v1alpha1/discovery_pb";
import { ProposalService, ProposalState } from "@cup-dev/api/cup/v1alpha1/proposal_pb";
import { ResourceSchema, ResourceService, WriteOutcome } from "@cup-dev/api/cup/v1alpha1/resource_pb";

import { startCupd } from "./cupd.js";

const flags = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default" };
const commitRe = /^[0-9a-f]{40}$/;

describe("against cupd (go run ./cmd/cupd serve)", () => {
  let cupd;
  const sessions = [];
  before(async () => {
    cupd = await startCupd();
  });
  after(async () => {
    for (const s of sessions) s.abort();
    await cupd?.stop();
  });

  const transports = {
    connect: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }),
    "grpc-web": (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
    grpc: (baseUrl) => {
      // HTTP/2 with prior knowledge (h2c): cupd serves it on its plain port.
      const sessionManager = new Http2SessionManager(baseUrl);
      sessions.push(sessionManager);
      return createGrpcTransport({ baseUrl, sessionManager });
    },
  };

  for (const [name, newTransport] of Object.entries(transports)) {
    describe(`over ${name}`, () => {
      let resources, discovery, proposals;
      before(() => {
        const transport = newTransport(cupd.baseUrl);
        resources = createClient(ResourceService, transport);
        discovery = createClient(DiscoveryService, transport);
        proposals = createClient(ProposalService, transport);
      });

      it("lists the definitions", async () => {
        const res = await discovery.listDefinitions({});
        assert.deepEqual(res.definitions.map((d) => d.name).sort(), [
          "bundles.flags.cup.dev",
          "configlayers.config.cup.dev",
          "flagbundles.flags.cup.dev",
          "flags.flags.cup.dev",
          "segments.flags.cup.dev",
          "serviceconfigs.config.cup.dev",
          "services.apps.cup.dev",
        ]);
        const flag = res.definitions.find((d) => d.name === "flags.flags.cup.dev");
        assert.equal(flag?.names?.kind, "Flag");
        assert.equal(flag?.versions[0]?.name, "v1alpha1");
        assert.equal(typeof flag?.versions[0]?.schema, "object");
      });

      it("gets a flag", async () => {
        const res = await resources.get({ ...flags, name: "new-checkout" });
        assert.match(res.commit, commitRe);
        const r = res.resource;
        assert.equal(r?.apiVersion, "flags.cup.dev/v1alpha1");
        assert.equal(r?.kind, "Flag");
        assert.equal(r?.metadata?.namespace, "default");
        assert.equal(r?.metadata?.name, "new-checkout");
        assert.equal(r?.metadata?.labels.team, "payments");
        assert.notEqual(r?.metadata?.resourceVersion, "");
        assert.equal(r?.spec?.enabled, true);
        assert.equal(typeof r?.spec?.rollout, "number");
        assert.deepEqual(res.proposals, [], "cupd without an SCM knows no proposals");
      });

      it("derives a bundle's status and the reconcilers' graph", async () => {
        // Staging's: the other tests write flags of default, whose bundle
        // may be pending.
        const bundles = { ...flags, plural: "bundles", namespace: "staging" };
        const st = await resources.getStatus({ ...bundles, name: "staging" });
        assert.match(st.commit, commitRe);
        const ready = st.conditions.find((c) => c.type === "Ready");
        assert.equal(ready?.reconciler, "flag-bundles");
        assert.equal(ready?.status, "True", "the demo's bundles are converged");
        assert.equal(ready?.observedRevision, st.commit);
        const plain = await resources.getStatus({ ...flags, name: "new-checkout" });
        assert.deepEqual(plain.conditions, [], "no reconciler has flags as its primary");
        await assert.rejects(resources.getStatus({ ...bundles, name: "no-such-bundle" }), (err) => {
          assert.equal(ConnectError.from(err).code, Code.NotFound);
          return true;
        });
        const graph = await discovery.getDependencyGraph({});
        assert.deepEqual(
          graph.edges.map((e) => `${e.reconciler} ${e.edgeKind} ${e.plural} ${e.mapper}`),
          [
            `flag-bundles ${EdgeKind.PRIMARY} bundles `,
            `flag-bundles ${EdgeKind.MAPPED} flags selector`,
            `flag-bundles ${EdgeKind.MAPPED} segments selector`,
            `flag-bundles ${EdgeKind.OUTPUT_EXCLUSIVE} flagbundles `,
            `service-configs ${EdgeKind.PRIMARY} services `,
            `service-configs ${EdgeKind.MAPPED} configlayers selector`,
            `service-configs ${EdgeKind.MAPPED} configlayers selector`,
            `service-configs ${EdgeKind.MAPPED} configlayers reference`,
            `service-configs ${EdgeKind.OUTPUT_EXCLUSIVE} serviceconfigs `,
            `service-configs ${EdgeKind.OUTPUT_SHARED} services `,
          ],
        );
      });

      it("says that listing proposals needs an SCM", async () => {
        // cupd here runs without --scm, so the ProposalService cannot answer.
        const { group, plural, namespace } = flags;
        const request = { state: ProposalState.OPEN, group, plural, namespace, name: "new-checkout" };
        await assert.rejects(proposals.listProposals(request), (err) => {
          assert.ok(err instanceof ConnectError, `not a ConnectError: ${err}`);
          assert.equal(err.code, Code.FailedPrecondition, err.message);
          assert.match(err.rawMessage, /no SCM is configured/);
          return true;
        });
      });

      it("lists flags by label selector", async () => {
        const res = await resources.list({ ...flags, labelSelector: "team in (payments,web)" });
        assert.match(res.commit, commitRe);
        assert.deepEqual(
          res.items.map((r) => r.metadata?.name),
          ["dark-mode", "new-checkout"],
        );
        assert.equal(res.nextPageToken, "");
      });

      it("creates, rewrites and deletes a flag", async () => {
        const flagName = `ts-${name}`;
        const resource = create(ResourceSchema, {
          metadata: { name: flagName, labels: { team: "ts" } },
          spec: { enabled: true, rollout: 5 },
        });

        const put = await resources.put({ ...flags, name: flagName, resource });
        assert.equal(put.result?.outcome, WriteOutcome.COMMITTED);
        assert.match(put.result?.commit ?? "", commitRe);
        assert.match(put.result?.baseCommit ?? "", commitRe);
        assert.notEqual(put.result?.commit, put.result?.baseCommit);
        assert.equal(put.resource?.kind, "Flag");
        assert.equal(put.resource?.metadata?.namespace, "default");
        assert.notEqual(put.resource?.metadata?.resourceVersion, "");
        assert.deepEqual(put.resource?.spec, { enabled: true, rollout: 5 });

        // At the put's commit: the demo's reconciler may have committed
        // the default bundle's change after it already.
        const got = await resources.get({ ...flags, name: flagName, revision: put.result?.commit });
        assert.equal(got.commit, put.result?.commit);
        assert.equal(got.resource?.metadata?.resourceVersion, put.resource?.metadata?.resourceVersion);
        assert.deepEqual(got.resource?.spec, { enabled: true, rollout: 5 });

        const again = await resources.put({ ...flags, name: flagName, resource });
        assert.equal(again.result?.outcome, WriteOutcome.UNCHANGED);
        assert.equal(again.result?.commit, "");

        const del = await resources.delete({ ...flags, name: flagName });
        assert.equal(del.result?.outcome, WriteOutcome.COMMITTED);
        assert.match(del.result?.commit ?? "", commitRe);

        await assert.rejects(resources.get({ ...flags, name: flagName }), (err) => {
          assert.equal(ConnectError.from(err).code, Code.NotFound);
          return true;
        });
      });

      it("replays a write repeated with its idempotency key", async () => {
        const flagName = `ts-idempotent-${name}`;
        const request = {
          ...flags,
          name: flagName,
          idempotencyKey: `create:${flagName}`,
          resource: { spec: { enabled: true, rollout: 7 } },
        };
        const first = await resources.put(request);
        assert.equal(first.result?.outcome, WriteOutcome.COMMITTED);
        assert.equal(first.result?.replayed, false);
        const repeat = await resources.put(request);
        assert.equal(repeat.result?.outcome, WriteOutcome.COMMITTED);
        assert.equal(repeat.result?.replayed, true);
        assert.equal(repeat.result?.commit, first.result?.commit);
        // The head may have moved since (the demo's reconciler commits the
        // default bundle after a flag changes): the flag's history shows
        // that the repeat wrote nothing.
        const hist = await resources.history({ ...flags, name: flagName });
        assert.deepEqual(hist.entries.map((e) => e.commit), [first.result?.commit], "the repeat wrote a commit");

        await assert.rejects(
          resources.put({ ...request, resource: { spec: { enabled: false } } }),
          (err) => {
            assert.equal(ConnectError.from(err).code, Code.FailedPrecondition, String(err));
            return true;
          },
        );
      });

      it("rejects an invalid name", async () => {
        await assert.rejects(
          resources.put({
            ...flags,
            name: "../x",
            resource: { spec: { enabled: true } },
          }),
          (err) => {
            assert.ok(err instanceof ConnectError, `not a ConnectError: ${err}`);
            assert.equal(err.code, Code.InvalidArgument, err.message);
            assert.match(err.rawMessage, /\bname\b/);
            return true;
          },
        );
      });
    });
  }

  describe("over connect with HTTP GET", () => {
    it("gets a flag with a GET request", async (t) => {
      // Get has idempotency_level NO_SIDE_EFFECTS, so the client may use GET.
      // Node 20 may publish a request twice when it reuses a keep-alive socket.
      const requests = new Set();
      const onRequest = ({ request }) => requests.add(request);
      diagnostics_channel.subscribe("http.client.request.start", onRequest);
      t.after(() => diagnostics_channel.unsubscribe("http.client.request.start", onRequest));
      const client = createClient(
        ResourceService,
        createConnectTransport({ baseUrl: cupd.baseUrl, httpVersion: "1.1", useHttpGet: true }),
      );
      const res = await client.get({ ...flags, name: "dark-mode" });
      assert.equal(res.resource?.metadata?.labels.team, "web");
      assert.equal(res.resource?.spec?.enabled, false);
      assert.deepEqual(
        [...requests].map((r) => `${r.method} ${r.path.split("?")[0]}`),
        ["GET /cup.v1alpha1.ResourceService/Get"],
      );
    });
  });
});
