// Checks that the generated package imports and its messages, enums and
// service descriptors work, without a server.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { create, fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { file_buf_validate_validate } from "@cup-dev/api/buf/validate/validate_pb";
import {
  DiscoveryService,
  ListDefinitionsResponseSchema,
} from "@cup-dev/api/cup/v1alpha1/discovery_pb";
import { ProposalSchema, ProposalService } from "@cup-dev/api/cup/v1alpha1/proposal_pb";
import {
  PutRequestSchema,
  ResourceSchema,
  ResourceService,
  WriteOutcome,
  WriteOutcomeSchema,
} from "@cup-dev/api/cup/v1alpha1/resource_pb";

describe("generated package @cup-dev/api", () => {
  it("describes the files and their dependencies", () => {
    assert.equal(file_buf_validate_validate.name, "buf/validate/validate");
    assert.equal(ResourceSchema.typeName, "cup.v1alpha1.Resource");
    assert.equal(ResourceSchema.file.name, "cup/v1alpha1/resource");
    assert.deepEqual(
      ResourceSchema.file.dependencies.map((f) => f.name).sort(),
      ["buf/validate/validate", "cup/v1alpha1/proposal", "google/protobuf/struct"],
    );
    assert.deepEqual(
      ProposalSchema.file.dependencies.map((f) => f.name).sort(),
      ["buf/validate/validate", "google/protobuf/timestamp"],
    );
  });

  it("describes the services", () => {
    assert.equal(ResourceService.typeName, "cup.v1alpha1.ResourceService");
    assert.deepEqual(
      ResourceService.methods.map((m) => [m.name, m.localName, m.methodKind]),
      [
        ["Get", "get", "unary"],
        ["List", "list", "unary"],
        ["Put", "put", "unary"],
        ["Delete", "delete", "unary"],
        ["Apply", "apply", "unary"],
        ["Patch", "patch", "unary"],
        ["Watch", "watch", "server_streaming"],
        ["History", "history", "unary"],
        ["GetStatus", "getStatus", "unary"],
        ["Render", "render", "unary"],
      ],
    );
    // Reads are marked side-effect free, so Connect clients may use HTTP GET.
    assert.equal(ResourceService.method.get.idempotency, MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS);
    assert.equal(ResourceService.method.put.idempotency, MethodOptions_IdempotencyLevel.IDEMPOTENCY_UNKNOWN);
    assert.equal(ResourceService.method.apply.idempotency, MethodOptions_IdempotencyLevel.IDEMPOTENCY_UNKNOWN);
    assert.equal(ResourceService.method.watch.idempotency, MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS);
    assert.equal(DiscoveryService.typeName, "cup.v1alpha1.DiscoveryService");
    assert.deepEqual(
      DiscoveryService.methods.map((m) => m.localName),
      ["listDefinitions", "getDefinition", "getDependencyGraph", "listNamespaces", "checkAccess"],
    );
    assert.equal(ProposalService.typeName, "cup.v1alpha1.ProposalService");
    assert.deepEqual(
      ProposalService.methods.map((m) => [m.localName, m.idempotency]),
      [
        ["listProposals", MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS],
        ["getProposal", MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS],
      ],
    );
  });

  it("has the WriteOutcome enum", () => {
    assert.equal(WriteOutcome.UNCHANGED, 1);
    assert.equal(WriteOutcome.COMMITTED, 2);
    assert.equal(WriteOutcome.DRY_RUN, 3);
    assert.deepEqual(
      WriteOutcomeSchema.values.map((v) => v.name),
      ["WRITE_OUTCOME_UNSPECIFIED", "WRITE_OUTCOME_UNCHANGED", "WRITE_OUTCOME_COMMITTED", "WRITE_OUTCOME_DRY_RUN"],
    );
  });

  it("round-trips a PutRequest through the binary and JSON forms", () => {
    const req = create(PutRequestSchema, {
      group: "flags.cup.dev",
      version: "v1alpha1",
      plural: "flags",
      namespace: "default",
      name: "ts-codec",
      dryRun: true,
      resource: {
        apiVersion: "flags.cup.dev/v1alpha1",
        kind: "Flag",
        metadata: { name: "ts-codec", labels: { team: "web" } },
        // google.protobuf.Struct is a plain JsonObject in protobuf-es v2.
        spec: { enabled: true, rollout: 5, variants: [{ key: "a", weight: 1 }], description: null },
      },
    });
    assert.equal(req.$typeName, "cup.v1alpha1.PutRequest");
    assert.equal(req.resource?.$typeName, "cup.v1alpha1.Resource");
    assert.equal(req.resource?.metadata?.namespace, "");

    const bin = fromBinary(PutRequestSchema, toBinary(PutRequestSchema, req));
    assert.deepEqual(bin, req);
    assert.deepEqual(bin.resource?.spec, {
      enabled: true,
      rollout: 5,
      variants: [{ key: "a", weight: 1 }],
      description: null,
    });

    const json = toJson(PutRequestSchema, req);
    assert.deepEqual(json, {
      group: "flags.cup.dev",
      version: "v1alpha1",
      plural: "flags",
      namespace: "default",
      name: "ts-codec",
      dryRun: true,
      resource: {
        apiVersion: "flags.cup.dev/v1alpha1",
        kind: "Flag",
        metadata: { name: "ts-codec", labels: { team: "web" } },
        spec: { enabled: true, rollout: 5, variants: [{ key: "a", weight: 1 }], description: null },
      },
    });
    assert.deepEqual(fromJson(PutRequestSchema, json), req);
  });

  it("reads a resource in the form users keep in files", () => {
    const r = fromJson(ResourceSchema, {
      apiVersion: "flags.cup.dev/v1alpha1",
      kind: "Flag",
      metadata: { namespace: "default", name: "dark-mode", resourceVersion: "0a1b" },
      spec: { enabled: false },
    });
    assert.equal(r.metadata?.resourceVersion, "0a1b");
    assert.deepEqual(r.spec, { enabled: false });
    assert.throws(() => fromJson(ResourceSchema, { metadata: { name: 1 } }), /name/);
  });

  it("decodes a ListDefinitionsResponse with a schema", () => {
    const res = create(ListDefinitionsResponseSchema, {
      definitions: [
        {
          name: "flags.flags.cup.dev",
          group: "flags.cup.dev",
          names: { kind: "Flag", plural: "flags", shortNames: ["fl"] },
          versions: [{ name: "v1alpha1", schemaTarget: "spec", schema: { type: "object" } }],
        },
      ],
    });
    const back = fromBinary(ListDefinitionsResponseSchema, toBinary(ListDefinitionsResponseSchema, res));
    assert.deepEqual(back.definitions[0].versions[0].schema, { type: "object" });
    assert.deepEqual(back.definitions[0].names?.shortNames, ["fl"]);
  });
});
