import { createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { ResourceService, WatchEventType } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";

// From a page cupd serves, or from an origin in cupd's --cors-allowed-origins.
const transport = createGrpcWebTransport({ baseUrl: "http://127.0.0.1:8181" });
const resources = createClient(ResourceService, transport);

const flags = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default" };
for await (const event of resources.watch(flags)) {
  const li = document.createElement("li");
  li.textContent = `${WatchEventType[event.type]} ${event.resource?.metadata?.name ?? ""} at ${event.commit}`;
  document.querySelector("ul")?.append(li);
}
