// The shell: a header with navigation, sign-in state and the theme switch,
// and the view the URL names.
import { useEffect, useState } from "preact/hooks";

import { setToken } from "./api";
import { Link } from "./components/common";
import { base, parse, useLocation } from "./route";
import { useAccess } from "./store";
import { ListView } from "./views/list";
import { ProposalsView } from "./views/proposals";
import { ResourceView } from "./views/resource";
import { SignInView } from "./views/signin";
import { TypesView } from "./views/types";
import { useSignInRedirect } from "./views/viewutil";

const themeKey = "cup.theme";

/** light, dark, or "" to follow the system. */
function useTheme(): [string, (t: string) => void] {
  const [theme, set] = useState(localStorage.getItem(themeKey) ?? "");
  useEffect(() => {
    if (theme) document.documentElement.dataset.theme = theme;
    else delete document.documentElement.dataset.theme;
  }, [theme]);
  return [
    theme,
    (t) => {
      if (t) localStorage.setItem(themeKey, t);
      else localStorage.removeItem(themeKey);
      set(t);
    },
  ];
}

function Who() {
  const { identity, error } = useAccess([]);
  // Every view needs cupd: when it wants credentials, ask for them first.
  useSignInRedirect(error);
  const signIn = `${base}/signin?next=${encodeURIComponent(location.pathname + location.search)}`;
  if (identity?.user) {
    return (
      <span class="who">
        <span data-testid="user">{identity.user}</span>
        <button type="button" class="secondary" onClick={() => setToken("")}>
          Sign out
        </button>
      </span>
    );
  }
  if (error || identity?.policy) return <Link href={signIn}>Sign in</Link>;
  return null;
}

export function App() {
  const { path, query } = useLocation();
  const route = parse(path);
  const [theme, setTheme] = useTheme();
  useEffect(() => {
    // Focus the main heading after navigation, for keyboard and screen-reader users.
    document.querySelector<HTMLElement>("main h1")?.focus({ preventScroll: true });
  }, [path]);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header>
        <nav aria-label="Main">
          <Link href={`${base}/`} class="brand">
            cup
          </Link>
          <Link href={`${base}/`} aria-current={route.view === "types" ? "page" : undefined}>
            Types
          </Link>
          <Link href={`${base}/proposals`} aria-current={route.view === "proposals" ? "page" : undefined}>
            Proposals
          </Link>
        </nav>
        <div class="tools">
          <Who />
          <label>
            <span class="visually-hidden">Theme</span>
            <select value={theme} onChange={(e) => setTheme((e.currentTarget as HTMLSelectElement).value)} aria-label="Theme">
              <option value="">System theme</option>
              <option value="light">Light</option>
              <option value="dark">Dark</option>
            </select>
          </label>
        </div>
      </header>
      <main id="main">
        {route.view === "types" && <TypesView />}
        {route.view === "list" && <ListView route={route} query={query} />}
        {route.view === "resource" && <ResourceView route={route} query={query} />}
        {route.view === "proposals" && <ProposalsView id={route.id} query={query} />}
        {route.view === "signin" && <SignInView query={query} />}
        {route.view === "notfound" && (
          <>
            <h1 tabIndex={-1}>Not found</h1>
            <p>
              Nothing is at <code>{route.path}</code>. <Link href={`${base}/`}>See the types</Link>.
            </p>
          </>
        )}
      </main>
    </>
  );
}
