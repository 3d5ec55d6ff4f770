// A Connect client of the cupd under test: the "other client" that writes
// behind the UI's back. It imports the generated package (@cup-dev/api, a
// symlink to gen/ts), so the tests that use it run with
// node --preserve-symlinks (as `make test-ui` and `npm test` do).
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { DiscoveryService } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";
import { ProposalService } from "@cup-dev/api/cup/v1alpha1/proposal_pb.js";
import { ResourceService } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";

export const flagsType = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags" };

/** Connect clients of cupd at baseUrl, with a bearer token when given. */
export function clients(baseUrl, token = "") {
  const transport = createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    interceptors: token
      ? [
          (next) => async (req) => {
            req.header.set("Authorization", `Bearer ${token}`);
            return next(req);
          },
        ]
      : [],
  });
  return {
    resources: createClient(ResourceService, transport),
    discovery: createClient(DiscoveryService, transport),
    proposals: createClient(ProposalService, transport),
  };
}

/** Creates or replaces the flag namespace/name; returns the PutResponse. */
export function putFlag(resources, namespace, name, spec, labels = {}) {
  return resources.put({
    ...flagsType,
    namespace,
    name,
    resource: { metadata: { namespace, name, labels }, spec },
  });
}

