// Sign-in and routing. A token is kept in sessionStorage (this tab only, never a cookie, sent only
// as an Authorization header to this origin); without one, the page asks the server whether the
// connection's client certificate names a user. Until one of the two succeeds only the login form
// is shown, and no view is even loaded.

import { Api } from "./api.js";
import { fill, h } from "./dom.js";

const TOKEN_KEY = "kplane.token";
const VIEWS = {
  resources: () => import("./resources.js"),
  object: () => import("./object.js"),
  cluster: () => import("./cluster.js"),
  events: () => import("./events.js"),
  controllers: () => import("./controllers.js"),
  traces: () => import("./traces.js"),
};

const $ = (id) => document.getElementById(id);
let session = null; // {api, user}
let unmount = null;

async function signIn(api) {
  const user = await api.whoami();
  session = { api, user };
  $("login").hidden = true;
  $("app").hidden = false;
  $("whoami").textContent = user.username;
  route();
}

function showLogin(message) {
  session = null;
  if (unmount) unmount();
  unmount = null;
  fill($("view"));
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("token").focus();
}

async function route() {
  if (!session) return;
  if (unmount) unmount();
  unmount = null;
  const name = (location.hash.match(/^#\/([a-z]+)/) || [])[1] || "resources";
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.hash.startsWith("#/" + name));
  const load = VIEWS[name] || VIEWS.resources;
  const view = $("view");
  fill(view, h("p", { class: "muted" }, "Loading…"));
  const routed = location.hash;
  const mod = await load();
  if (location.hash !== routed || !session) return; // the user moved on meanwhile
  fill(view);
  unmount = mod.mount(view, session) || null;
}

async function start() {
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const token = $("token").value.trim();
    if (!token) return;
    try {
      await signIn(new Api(token));
      sessionStorage.setItem(TOKEN_KEY, token);
      $("token").value = "";
    } catch (err) {
      showLogin(err.status === 401 ? "The server does not accept this token." : err.message);
    }
  });
  $("sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin("Signed out.");
  });
  window.addEventListener("hashchange", route);

  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) {
    try {
      await signIn(new Api(token));
      return;
    } catch {
      sessionStorage.removeItem(TOKEN_KEY);
    }
  }
  try {
    const resp = await fetch("/dashboard/session", { cache: "no-store" });
    const { certificateUser } = await resp.json();
    if (certificateUser) {
      await signIn(new Api(""));
      return;
    }
  } catch {
    // no certificate session: fall through to the form
  }
  showLogin("");
}

start();
