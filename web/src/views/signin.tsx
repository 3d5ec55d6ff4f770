// Sign in with a bearer token when cupd runs with a policy. The token is
// checked with cupd (CheckAccess with no checks says who it takes the caller
// for) before the user is sent on; it is kept for the tab only (api.ts).
import { useState } from "preact/hooks";

import { discovery, errorCode, errorText, setToken, token, Code } from "../api";
import "./signin.css";
import { base, navigate } from "../route";
import { useAccess } from "../store";

/**
 * Where to go after signing in: next when it is a path of this app (so no
 * sign-in link can send anyone to another site), else the types view.
 */
export function safeNext(next: string | null): string {
  const home = `${base}/`;
  if (!next || !next.startsWith(home) || next.startsWith("//") || next.includes("\\")) return home;
  try {
    const u = new URL(next, location.origin);
    if (u.origin !== location.origin || !u.pathname.startsWith(home) || u.pathname.startsWith(`${base}/signin`)) return home;
    return u.pathname + u.search + u.hash;
  } catch {
    return home;
  }
}

/** Asks cupd who the token is; Unimplemented (an older cupd) falls back to a read. */
async function verify(): Promise<string> {
  try {
    const r = await discovery.checkAccess({ checks: [] });
    return r.user;
  } catch (err) {
    if (errorCode(err) !== Code.Unimplemented) throw err;
    await discovery.listDefinitions({});
    return "";
  }
}

export function SignInView(props: { query: URLSearchParams }) {
  const next = safeNext(props.query.get("next"));
  const [value, setValue] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const { identity } = useAccess([]);

  return (
    <>
      <h1 tabIndex={-1}>Sign in</h1>
      <p>Sign in with a bearer token that cupd accepts (one from its tokens file).</p>
      {identity?.user && !busy && (
        <p class="muted" data-testid="signed-in-as">
          You are signed in as <strong>{identity.user}</strong>; signing in again replaces that token.
        </p>
      )}
      {identity && !identity.policy && !token() && (
        <p class="muted" data-testid="no-policy">
          cupd enforces no policy: everyone may do everything without signing in.
        </p>
      )}
      <form
        class="signin-form"
        data-testid="signin-form"
        onSubmit={async (e) => {
          e.preventDefault();
          const t = value.trim();
          if (!t || busy) return;
          setBusy(true);
          setError(undefined);
          setToken(t);
          try {
            await verify();
            setValue("");
            navigate(next, true);
          } catch (err) {
            // A token cupd does not take is forgotten at once.
            setToken("");
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label>
          Token
          <input
            data-testid="token-input"
            type="password"
            autocomplete="off"
            spellcheck={false}
            required
            value={value}
            aria-invalid={error !== undefined ? "true" : undefined}
            onInput={(e) => setValue((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" data-testid="signin" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      {error !== undefined && (
        <p class="error" role="alert" data-testid="signin-error">
          {errorCode(error) === Code.Unauthenticated ? "cupd does not accept this token" : "The token could not be checked"} ({errorText(error)}).
        </p>
      )}
    </>
  );
}
