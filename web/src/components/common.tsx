// Small pieces every view uses. Text from the repository is only ever
// rendered as text (Preact escapes it); links only go to http(s) or in-app.
import type { ComponentChildren } from "preact";

import { errorText, safeHref } from "../api";
import { base, onLinkClick } from "../route";
import { needsSignIn } from "../store";

/** An in-app link: a real href (new tab works), navigation without a page load. */
export function Link(props: { href: string; children: ComponentChildren; class?: string; "aria-current"?: "page" | undefined }) {
  return (
    <a href={props.href} class={props.class} aria-current={props["aria-current"]} onClick={onLinkClick}>
      {props.children}
    </a>
  );
}

/** A link out of the app, only when url is http(s); otherwise the text alone. */
export function OutLink(props: { url?: string; children: ComponentChildren }) {
  const href = safeHref(props.url);
  if (!href) return <span>{props.children}</span>;
  return (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {props.children}
    </a>
  );
}

/** An error from cupd, with a way to sign in when that is what it needs. */
export function ErrorBox(props: { error: unknown; onRetry?: () => void }) {
  return (
    <div class="error" role="alert">
      <span>{errorText(props.error)}</span>
      {needsSignIn(props.error) && (
        <>
          {" "}
          <Link href={`${base}/signin?next=${encodeURIComponent(location.pathname + location.search)}`}>Sign in</Link>
        </>
      )}
      {props.onRetry && (
        <button type="button" class="secondary" onClick={props.onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}

export function Loading(props: { what?: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading{props.what ? ` ${props.what}` : ""}…
    </p>
  );
}

/** Labels as chips, key=value. */
export function Labels(props: { labels: Record<string, string> | undefined }) {
  const entries = Object.entries(props.labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <span class="labels">
      {entries.map(([k, v]) => (
        <span class="chip" key={k}>
          {k}={v}
        </span>
      ))}
    </span>
  );
}

/** A commit, shortened, with the full one on hover. */
export function Commit(props: { sha: string }) {
  if (!props.sha) return <span class="muted">—</span>;
  return (
    <code class="sha" title={props.sha}>
      {props.sha.slice(0, 10)}
    </code>
  );
}

/** A time relative to now, the exact time on hover. */
export function Ago(props: { date: Date | undefined }) {
  if (!props.date || Number.isNaN(props.date.getTime())) return <span class="muted">—</span>;
  const s = Math.max(0, (Date.now() - props.date.getTime()) / 1000);
  const text =
    s < 60 ? `${Math.floor(s)}s` : s < 3600 ? `${Math.floor(s / 60)}m` : s < 86400 ? `${Math.floor(s / 3600)}h` : `${Math.floor(s / 86400)}d`;
  return <time dateTime={props.date.toISOString()} title={props.date.toISOString()}>{text}</time>;
}
