// The login form, used only with --auth-file: shown when a call answers
// 401. A user and password are sent as basic credentials, a token as
// `Authorization: Bearer`; either is kept in sessionStorage (see api.js)
// until "Log out" forgets it.

import { getAuth, setAuth } from "./api.js";

const $ = (id) => document.getElementById(id);
let loggedIn = () => {};

/** The `Authorization` value of basic credentials (UTF-8, base64). */
export function basicAuth(user, password) {
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return `Basic ${btoa(bin)}`;
}

/** Opens the form, with `message` (why it opened) above the fields. */
export function showLogin(message) {
  const box = $("login-error");
  box.textContent = message || "";
  box.hidden = !message;
  if (!$("login").open) $("login").showModal();
  ($("login-token").value ? $("login-token") : $("login-user")).focus();
}

/** Wires the form and the "Log out" button; `onLogin` runs after each login. */
export function initLogin(onLogin) {
  loggedIn = onLogin;
  $("logout").hidden = !getAuth();
  $("login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const token = $("login-token").value.trim();
    const user = $("login-user").value;
    if (!token && !user) { showLogin("Enter a user and password, or a token."); return; }
    setAuth(token ? `Bearer ${token}` : basicAuth(user, $("login-password").value));
    $("login-password").value = ""; $("login-token").value = "";
    $("login").close();
    $("logout").hidden = false;
    loggedIn();
  });
  // Forgetting the credentials reloads the page, so nothing it fetched
  // with them (results, completions, tenants) stays in memory.
  $("logout").addEventListener("click", () => { setAuth(""); location.reload(); });
}
