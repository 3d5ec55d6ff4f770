// The app's one way to cupd: the generated client (gen/ts, @cup-dev/api)
// over gRPC-Web, on the origin that served the app. Nothing else is fetched.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { DiscoveryService } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";
import { ProposalService } from "@cup-dev/api/cup/v1alpha1/proposal_pb.js";
import { ResourceService } from "@cup-dev/api/cup/v1alpha1/resource_pb.js";

const tokenKey = "cup.token";

/** The bearer token the user signed in with; kept for the tab only. */
export function token(): string {
  return sessionStorage.getItem(tokenKey) ?? "";
}

/** Keeps (or, with "", forgets) the token and tells the app. */
export function setToken(t: string) {
  if (t) sessionStorage.setItem(tokenKey, t);
  else sessionStorage.removeItem(tokenKey);
  window.dispatchEvent(new Event("cup:token"));
}

const bearer: Interceptor = (next) => async (req) => {
  const t = token();
  if (t) req.header.set("Authorization", `Bearer ${t}`);
  return next(req);
};

const transport = createGrpcWebTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [bearer],
});

export const resources = createClient(ResourceService, transport);
export const discovery = createClient(DiscoveryService, transport);
export const proposals = createClient(ProposalService, transport);

/** The message of an error from cupd or the network, for people. */
export function errorText(err: unknown): string {
  if (err instanceof ConnectError) return `${Code[err.code] ?? err.code}: ${err.rawMessage}`;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** The Connect code of err, or undefined when it is not a ConnectError. */
export function errorCode(err: unknown): Code | undefined {
  return err instanceof ConnectError ? err.code : undefined;
}

/**
 * The fields a schema violation names: cupd's InvalidArgument messages start
 * with the field path, e.g. "resource.spec.enabled: schema violation: ...";
 * several violations are joined with "; ". Paths are returned without the
 * leading "resource.", e.g. "spec.enabled".
 */
export function violations(err: unknown): { field: string; message: string }[] {
  if (!(err instanceof ConnectError) || err.code !== Code.InvalidArgument) return [];
  const out: { field: string; message: string }[] = [];
  for (const part of err.rawMessage.split(/;\s+(?=resource\.)/)) {
    const m = /^resource\.([A-Za-z0-9_.[\]-]+):\s*(.*)$/s.exec(part);
    if (m) out.push({ field: m[1], message: m[2] });
  }
  return out;
}

/** Only http(s) links are ever followed; anything else gives undefined. */
export function safeHref(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === "http:" || u.protocol === "https:" ? u.href : undefined;
  } catch {
    return undefined;
  }
}

export { Code, ConnectError };
