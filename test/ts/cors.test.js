// A page on another origin calls cupd (started with --cors-allowed-origins)
// through @connectrpc/connect-web, over Connect and gRPC-Web. Node's fetch
// applies no CORS, so browserFetch does what a browser does around each call.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { ResourceService } from "@cup-dev/api/cup/v1alpha1/resource_pb";

import { startCupd } from "./cupd.js";

const origin = "http://app.example:5173";
const flags = { group: "flags.cup.dev", version: "v1alpha1", plural: "flags", namespace: "default" };

/** Request headers a page may send without a preflight (with simple values). */
const simpleRequestHeaders = new Set(["accept", "accept-language", "content-language"]);
const simpleContentTypes = new Set(["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"]);
/** Response headers a page may read without Access-Control-Expose-Headers. */
const simpleResponseHeaders = new Set(["cache-control", "content-language", "content-length", "content-type", "expires", "last-modified", "pragma"]);

/**
 * Returns a fetch that behaves as a browser's on a page of pageOrigin (per
 * the Fetch standard, simplified): a call with other than simple headers or
 * methods is preceded by a preflight that must allow the origin, the method
 * and every header; the answer must allow the origin; and the page sees
 * only the response headers that are simple or exposed. Failures are the
 * TypeError a browser's fetch rejects with.
 */
function browserFetch(pageOrigin) {
  return async (input, init = {}) => {
    const url = typeof input === "string" ? input : input.url;
    const method = (init.method ?? "GET").toUpperCase();
    const headers = new Headers(init.headers);
    const unsafe = [...headers.keys()]
      .filter((n) => !simpleRequestHeaders.has(n) && !(n === "content-type" && simpleContentTypes.has(headers.get(n).split(";")[0].trim())))
      .sort();
    if (!["GET", "HEAD", "POST"].includes(method) || unsafe.length > 0) {
      const pre = await fetch(url, {
        method: "OPTIONS",
        headers: {
          Origin: pageOrigin,
          "Access-Control-Request-Method": method,
          ...(unsafe.length > 0 ? { "Access-Control-Request-Headers": unsafe.join(",") } : {}),
        },
      });
      const allowOrigin = pre.headers.get("access-control-allow-origin");
      const allowMethods = (pre.headers.get("access-control-allow-methods") ?? "").toUpperCase().split(/\s*,\s*/);
      const allowHeaders = (pre.headers.get("access-control-allow-headers") ?? "").toLowerCase().split(/\s*,\s*/);
      if (!pre.ok || (allowOrigin !== pageOrigin && allowOrigin !== "*") ||
          (!["GET", "HEAD", "POST"].includes(method) && !allowMethods.includes(method)) ||
          !unsafe.every((n) => allowHeaders.includes(n))) {
        throw new TypeError(`Failed to fetch: CORS preflight refused (${pre.status}, allow-origin ${allowOrigin}, allow-headers ${allowHeaders})`);
      }
    }
    headers.set("Origin", pageOrigin);
    const res = await fetch(url, { ...init, headers });
    const allowOrigin = res.headers.get("access-control-allow-origin");
    if (allowOrigin !== pageOrigin && allowOrigin !== "*") {
      throw new TypeError(`Failed to fetch: no Access-Control-Allow-Origin for ${pageOrigin}`);
    }
    const exposed = (res.headers.get("access-control-expose-headers") ?? "").toLowerCase().split(/\s*,\s*/);
    const visible = new Headers();
    for (const [k, v] of res.headers) {
      if (simpleResponseHeaders.has(k) || exposed.includes(k)) visible.append(k, v);
    }
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers: visible });
  };
}

describe("a page on another origin, through connect-web", () => {
  let cupd;
  before(async () => {
    cupd = await startCupd(["--cors-allowed-origins", origin]);
  });
  after(async () => {
    await cupd?.stop();
  });

  const transports = {
    connect: (baseUrl, fetch) => createConnectTransport({ baseUrl, fetch }),
    "grpc-web": (baseUrl, fetch) => createGrpcWebTransport({ baseUrl, fetch }),
  };
  for (const [name, newTransport] of Object.entries(transports)) {
    describe(`over ${name}`, () => {
      it("lists the flags", async () => {
        const resources = createClient(ResourceService, newTransport(cupd.baseUrl, browserFetch(origin)));
        const res = await resources.list(flags);
        assert.ok(res.items.some((r) => r.metadata?.name === "new-checkout"), "the demo's new-checkout flag is listed");
      });

      it("reads the error code of a failed call", async () => {
        const resources = createClient(ResourceService, newTransport(cupd.baseUrl, browserFetch(origin)));
        await assert.rejects(resources.get({ ...flags, name: "no-such-flag" }), (err) => {
          assert.ok(err instanceof ConnectError);
          assert.equal(err.code, Code.NotFound, err.message);
          return true;
        });
      });

      it("is refused to a page of an origin not allowed", async () => {
        const resources = createClient(ResourceService, newTransport(cupd.baseUrl, browserFetch("http://evil.example")));
        await assert.rejects(resources.list(flags), (err) => {
          assert.ok(err instanceof ConnectError);
          assert.match(err.message, /CORS|Access-Control/);
          return true;
        });
      });
    });
  }
});
