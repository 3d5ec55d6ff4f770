import { defineConfig } from "vite";

// The app is served by cupd at /ui/; cupd embeds dist/app (see web/embed.go).
export default defineConfig({
  base: "/ui/",
  build: {
    outDir: "dist/app",
    emptyOutDir: true,
    target: "es2022",
    // No inline scripts or styles anywhere: cupd's Content-Security-Policy forbids them.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: true,
  },
  resolve: {
    // gen/ts is linked with file:; its peer dependency @bufbuild/protobuf must
    // resolve from here (web/node_modules), not from beside gen/ts.
    dedupe: ["@bufbuild/protobuf"],
    preserveSymlinks: true,
  },
  server: {
    proxy: { "/cup.v1alpha1.": "http://127.0.0.1:8181" },
  },
});
