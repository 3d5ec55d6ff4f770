import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ResourceService } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";

const transport = createConnectTransport({ baseUrl: "http://127.0.0.1:8181", httpVersion: "1.1" });
const resources = createClient(ResourceService, transport);

const flags = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default" };
const { items, commit } = await resources.list(flags);
for (const flag of items) {
  console.log(flag.metadata?.name, flag.specJson || JSON.stringify(flag.spec));
}
console.log(`read at ${commit}`);
