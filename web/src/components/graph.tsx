// The reconcilers' dependency graph as a picture: input types on the left,
// reconcilers in the middle, output types on the right, an arrow for every
// edge with its kind as a label. A layered layout computed here (no library):
// the graph of a cupd is small. Names come from the served configuration, so
// every label is an SVG text node, never markup. A list says the same for
// screen readers.
import { EdgeKind, type DependencyEdge } from "@cup-dev/api/cup/v1alpha1/discovery_pb.js";

import { base, listPath, navigate } from "../route";
import "./graph.css";

type TypeNode = { key: string; group: string; version: string; plural: string; kind: string };
type Side = "in" | "out";
type DrawnEdge = { reconciler: string; type: string; side: Side; labels: string[]; kinds: Set<EdgeKind> };

/** What an edge kind is called in labels. */
function kindLabel(k: EdgeKind, mapper: string): string {
  switch (k) {
    case EdgeKind.PRIMARY:
      return "primary";
    case EdgeKind.MAPPED:
      return mapper ? `mapped: ${mapper}` : "mapped";
    case EdgeKind.OUTPUT_EXCLUSIVE:
      return "output, exclusive";
    case EdgeKind.OUTPUT_SHARED:
      return "output, shared";
    default:
      return "related";
  }
}

function kindClass(k: EdgeKind): string {
  switch (k) {
    case EdgeKind.PRIMARY:
      return "edge-primary";
    case EdgeKind.MAPPED:
      return "edge-mapped";
    case EdgeKind.OUTPUT_EXCLUSIVE:
      return "edge-output-exclusive";
    case EdgeKind.OUTPUT_SHARED:
      return "edge-output-shared";
    default:
      return "";
  }
}

/** The graph's nodes and edges, merged: one drawn edge per reconciler, type and side. */
export function layoutModel(edges: DependencyEdge[]) {
  const types = new Map<string, TypeNode>();
  const reconcilers: string[] = [];
  const drawn = new Map<string, DrawnEdge>();
  for (const e of edges) {
    if (!reconcilers.includes(e.reconciler)) reconcilers.push(e.reconciler);
    const key = `${e.group}/${e.plural}`;
    if (!types.has(key)) types.set(key, { key, group: e.group, version: e.version, plural: e.plural, kind: e.kind || e.plural });
    const side: Side = e.edgeKind === EdgeKind.OUTPUT_EXCLUSIVE || e.edgeKind === EdgeKind.OUTPUT_SHARED ? "out" : "in";
    const dk = `${e.reconciler}\n${key}\n${side}`;
    let d = drawn.get(dk);
    if (!d) drawn.set(dk, (d = { reconciler: e.reconciler, type: key, side, labels: [], kinds: new Set() }));
    d.kinds.add(e.edgeKind);
    // Mapped edges of several mappers (selector, reference) share one label.
    const label = kindLabel(e.edgeKind, e.mapper);
    const mapped = d.labels.findIndex((l) => l.startsWith("mapped") && e.edgeKind === EdgeKind.MAPPED);
    if (mapped >= 0 && e.mapper) {
      const have = d.labels[mapped].replace(/^mapped:?\s*/, "").split(", ").filter(Boolean);
      if (!have.includes(e.mapper)) have.push(e.mapper);
      d.labels[mapped] = `mapped: ${have.join(", ")}`;
    } else if (!d.labels.includes(label)) {
      d.labels.push(label);
    }
  }
  return { types, reconcilers, edges: [...drawn.values()] };
}

const charW = 7.2; // a rough width of a 12 px character, for box sizes
const smallW = 6.2;
const nodeH = 40;
const recH = 32;
const rowGap = 18;
const colGap = 230;
const pad = 12;

function typeWidth(t: TypeNode): number {
  return Math.ceil(Math.max(t.kind.length * charW * 1.1, `${t.plural}.${t.group}`.length * smallW) + 24);
}

/** Orders ids by the mean position of what they connect to (fewer crossings), then by name. */
function byBarycenter(ids: string[], links: Map<string, number[]>, name: (id: string) => string): string[] {
  const mean = (id: string) => {
    const xs = links.get(id) ?? [];
    return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0;
  };
  return [...ids].sort((a, b) => mean(a) - mean(b) || (name(a) < name(b) ? -1 : name(a) > name(b) ? 1 : 0));
}

/** Follows an in-app link inside the SVG without a page load (plain left clicks only). */
function onSvgLinkClick(e: MouseEvent) {
  const a = e.currentTarget as SVGAElement | null;
  const href = a?.getAttribute("href");
  if (!href || !href.startsWith(`${base}/`) || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(href);
}

/** The dependency graph: an SVG picture and, for screen readers, the same as a list. */
export function DependencyGraph(props: { edges: DependencyEdge[] }) {
  if (props.edges.length === 0) {
    return (
      <p class="muted" data-testid="graph-empty">
        cupd runs no reconcilers: no type is derived from another.
      </p>
    );
  }
  const m = layoutModel(props.edges);
  const recIndex = new Map(m.reconcilers.map((r, i) => [r, i]));
  const inLinks = new Map<string, number[]>();
  const outLinks = new Map<string, number[]>();
  for (const e of m.edges) {
    const l = e.side === "in" ? inLinks : outLinks;
    if (!l.has(e.type)) l.set(e.type, []);
    l.get(e.type)!.push(recIndex.get(e.reconciler)!);
  }
  const kindOf = (k: string) => m.types.get(k)!.kind;
  const inputs = byBarycenter([...inLinks.keys()], inLinks, kindOf);
  const outputs = byBarycenter([...outLinks.keys()], outLinks, kindOf);

  const leftW = Math.max(80, ...inputs.map((k) => typeWidth(m.types.get(k)!)));
  const midW = Math.max(80, ...m.reconcilers.map((r) => Math.ceil(r.length * charW + 28)));
  const rightW = Math.max(80, ...outputs.map((k) => typeWidth(m.types.get(k)!)));
  const colH = (n: number, h: number) => n * h + Math.max(0, n - 1) * rowGap;
  const height = Math.max(colH(inputs.length, nodeH), colH(m.reconcilers.length, recH), colH(outputs.length, nodeH)) + 2 * pad;
  const xLeft = pad;
  const xMid = xLeft + leftW + colGap;
  const xRight = xMid + midW + colGap;
  const width = xRight + rightW + pad;
  const top = (n: number, h: number) => (height - colH(n, h)) / 2;
  const yOf = (i: number, n: number, h: number) => top(n, h) + i * (h + rowGap);

  const inPos = new Map(inputs.map((k, i) => [k, yOf(i, inputs.length, nodeH)]));
  const outPos = new Map(outputs.map((k, i) => [k, yOf(i, outputs.length, nodeH)]));
  const recPos = new Map(m.reconcilers.map((r, i) => [r, yOf(i, m.reconcilers.length, recH)]));

  const typeBox = (k: string, x: number, y: number, w: number, side: Side) => {
    const t = m.types.get(k)!;
    return (
      <a
        key={`${side}-${k}`}
        href={listPath(t, "")}
        onClick={onSvgLinkClick}
        class="node node-type"
        data-testid={`graph-type-${side}-${t.plural}`}
        aria-label={`${t.kind} (${t.plural}.${t.group})`}
      >
        <rect x={x} y={y} width={w} height={nodeH} rx={6} />
        <text x={x + 10} y={y + 16} class="node-kind">
          {t.kind}
        </text>
        <text x={x + 10} y={y + 32} class="node-sub">
          {`${t.plural}.${t.group}`}
        </text>
      </a>
    );
  };

  return (
    <div class="graph-wrap">
      <svg
        class="graph"
        data-testid="graph"
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-labelledby="cup-graph-title"
      >
        <title id="cup-graph-title">
          The reconcilers' dependency graph: the types each reads on the left, the types each writes on the right.
        </title>
        <defs>
          <marker id="cup-graph-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="arrowhead" />
          </marker>
        </defs>
        <g class="edges">
          {m.edges.map((e) => {
            const ry = recPos.get(e.reconciler)! + recH / 2;
            let x1: number, y1: number, x2: number, y2: number;
            if (e.side === "in") {
              x1 = xLeft + leftW;
              y1 = inPos.get(e.type)! + nodeH / 2;
              x2 = xMid;
              y2 = ry;
            } else {
              x1 = xMid + midW;
              y1 = ry;
              x2 = xRight;
              y2 = outPos.get(e.type)! + nodeH / 2;
            }
            const dx = (x2 - x1) / 2;
            const cls = [...e.kinds].map(kindClass).join(" ");
            return (
              <g key={`${e.reconciler}-${e.type}-${e.side}`} class={`edge ${cls}`} data-testid="graph-edge">
                <path d={`M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2 - 2},${y2}`} marker-end="url(#cup-graph-arrow)" />
                <text x={(x1 + x2) / 2} y={(y1 + y2) / 2 - 4} text-anchor="middle" class="edge-label">
                  {e.labels.join("; ")}
                </text>
              </g>
            );
          })}
        </g>
        <g class="nodes">
          {inputs.map((k) => typeBox(k, xLeft, inPos.get(k)!, leftW, "in"))}
          {m.reconcilers.map((r) => (
            <g key={`rec-${r}`} class="node node-rec" data-testid={`graph-reconciler-${r}`}>
              <rect x={xMid} y={recPos.get(r)!} width={midW} height={recH} rx={16} />
              <text x={xMid + midW / 2} y={recPos.get(r)! + recH / 2 + 4} text-anchor="middle">
                {r}
              </text>
            </g>
          ))}
          {outputs.map((k) => typeBox(k, xRight, outPos.get(k)!, rightW, "out"))}
        </g>
      </svg>
      <div class="visually-hidden" data-testid="graph-list">
        <p>The reconcilers, the types each reads and the types each writes:</p>
        <ul>
          {m.reconcilers.map((r) => {
            const reads = m.edges.filter((e) => e.reconciler === r && e.side === "in");
            const writes = m.edges.filter((e) => e.reconciler === r && e.side === "out");
            const say = (es: DrawnEdge[]) =>
              es.map((e) => `${m.types.get(e.type)!.kind} (${m.types.get(e.type)!.plural}.${m.types.get(e.type)!.group}; ${e.labels.join("; ")})`).join(", ") ||
              "nothing";
            return (
              <li key={r}>
                {`Reconciler ${r} reads ${say(reads)}, and writes ${say(writes)}.`}
              </li>
            );
          })}
        </ul>
      </div>
      <p class="graph-legend muted">
        <span class="legend-item">
          <svg width="28" height="8" aria-hidden="true">
            <line x1="0" y1="4" x2="28" y2="4" class="legend-primary" />
          </svg>{" "}
          primary: one reconcile per resource
        </span>
        <span class="legend-item">
          <svg width="28" height="8" aria-hidden="true">
            <line x1="0" y1="4" x2="28" y2="4" class="legend-mapped" />
          </svg>{" "}
          mapped: an input related to primaries
        </span>
        <span class="legend-item">
          <svg width="28" height="8" aria-hidden="true">
            <line x1="0" y1="4" x2="28" y2="4" class="legend-output" />
          </svg>{" "}
          output: exclusive (only this reconciler writes it) or shared
        </span>
      </p>
    </div>
  );
}
