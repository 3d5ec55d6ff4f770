// Unified diffs, coloured by line: what a write would change (cupd's
// WriteResult.changes[].diff) or what changed between two texts (jsdiff).
// Every line is text: a diff of untrusted content stays untrusted content.
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from "diff";

/** One unified diff as a <pre class="diff">, lines marked add, del or hunk. */
export function DiffText(props: { diff: string; testid?: string; label?: string }) {
  const lines = props.diff.replace(/\n$/, "").split("\n");
  return (
    <pre class="diff" data-testid={props.testid ?? "diff"} aria-label={props.label} tabIndex={0}>
      {lines.map((line, i) => {
        const cls =
          line.startsWith("+++") || line.startsWith("---") || line.startsWith("@@") || line.startsWith("\\")
            ? "hunk"
            : line.startsWith("+")
              ? "add"
              : line.startsWith("-")
                ? "del"
                : undefined;
        // A screen reader hears the sign; colour alone carries nothing.
        return cls ? (
          <span key={i} class={cls}>
            {line + "\n"}
          </span>
        ) : (
          line + "\n"
        );
      })}
    </pre>
  );
}

/** The files a write changes (or would), each with its diff; "No changes" when there are none. */
export function Changes(props: { changes: { path: string; operation: number; diff: string }[]; testid?: string }) {
  if (props.changes.length === 0) {
    return (
      <p class="notice" data-testid={props.testid ?? "diff"} data-empty="true">
        No changes.
      </p>
    );
  }
  return (
    <div data-testid={props.testid ?? "diff"}>
      {props.changes.map((c) => (
        <div key={c.path} class="rv-change">
          <p class="rv-path">
            <code>{c.path}</code> <span class="muted">{["", "created", "updated", "deleted"][c.operation] ?? ""}</span>
          </p>
          {c.diff ? <DiffText diff={c.diff} testid="diff-text" label={`Changes to ${c.path}`} /> : <p class="muted">No diff shown.</p>}
        </div>
      ))}
    </div>
  );
}

/** The unified diff from a to b (line by line), without jsdiff's "Index:" header. */
export function diffTexts(aName: string, bName: string, a: string, b: string): string {
  return createTwoFilesPatch(aName, bName, a, b, undefined, undefined, { context: 3, headerOptions: FILE_HEADERS_ONLY });
}
