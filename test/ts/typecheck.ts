// Type-checked by typecheck.test.js (tsc --noEmit), never run: proves the
// generated declarations (.d.ts) resolve and type a client and its requests.
import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { DiscoveryService, type ResourceDefinition } from "@cup-dev/api/cup/v1alpha1/discovery_pb";
import { type Proposal, ProposalService, ProposalState } from "@cup-dev/api/cup/v1alpha1/proposal_pb";
import {
  type PutRequest,
  PutRequestSchema,
  type Resource,
  ResourceSchema,
  ResourceService,
  WriteOutcome,
} from "@cup-dev/api/cup/v1alpha1/resource_pb";

const spec: JsonObject = { enabled: true, rollout: 5 };

const resource: Resource = create(ResourceSchema, {
  apiVersion: "flags.cup.dev/v1alpha1",
  kind: "Flag",
  metadata: { name: "ts-typecheck", labels: { team: "web" } },
  spec,
});

const init: MessageInitShape<typeof PutRequestSchema> = {
  group: "flags.cup.dev",
  version: "v1alpha1",
  plural: "flags",
  namespace: "default",
  name: "ts-typecheck",
  resource,
};
export const request: PutRequest = create(PutRequestSchema, init);

// @ts-expect-error: dryRun is a boolean.
create(PutRequestSchema, { dryRun: "yes" });
// @ts-expect-error: labels are strings.
create(ResourceSchema, { metadata: { labels: { team: 1 } } });
// @ts-expect-error: there is no such field.
create(PutRequestSchema, { nmae: "typo" });

export async function putAndDescribe(transport: Transport): Promise<[WriteOutcome, ResourceDefinition[]]> {
  const resources: Client<typeof ResourceService> = createClient(ResourceService, transport);
  const discovery = createClient(DiscoveryService, transport);
  const res = await resources.put(init);
  const outcome: WriteOutcome = res.result?.outcome ?? WriteOutcome.UNSPECIFIED;
  const enabled: boolean = res.resource?.spec?.enabled === true;
  const version: string = res.resource?.metadata?.resourceVersion ?? "";
  // @ts-expect-error: the method is named get, not Get.
  void resources.Get;
  void enabled, version;
  return [outcome, (await discovery.listDefinitions({})).definitions];
}

export async function openProposals(transport: Transport, name: string): Promise<Proposal[]> {
  const proposals = createClient(ProposalService, transport);
  const ref = { group: "flags.cup.dev", plural: "flags", namespace: "default", name };
  const res = await proposals.listProposals({ state: ProposalState.OPEN, ...ref });
  const got = await createClient(ResourceService, transport).get({ ...ref, version: "v1alpha1" });
  // @ts-expect-error: a proposal's id is a string.
  const id: number = res.proposals[0]?.id ?? 0;
  void id;
  return [...res.proposals, ...got.proposals];
}
