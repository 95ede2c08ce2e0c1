// Runs service/static/dashboard.js under Node against a live service and prints the page's tables as HTML,
// for machines without Chromium: `node tests/render_dashboard.js <dashboard.js> <server url> <agent id> <key>`.
// A minimal DOM: elements keep their children, text, class, hidden flag and data-* attributes.
"use strict";
const fs = require("fs");
const vm = require("vm");

const [script, base, agentId, key] = process.argv.slice(2);

class Element {
  constructor(tag, id) {
    this.tagName = tag;
    this.id = id || "";
    this.children = [];
    this.attributes = {};
    this.dataset = {};
    this.className = "";
    this.hidden = false;
    this._text = "";
  }
  appendChild(child) { this.children.push(child); return child; }
  setAttribute(name, value) { this.attributes[name] = String(value); }
  set textContent(value) { this._text = String(value); this.children = []; }
  get textContent() { return this._text + this.children.map((c) => c.textContent).join(""); }
  html() {
    const attributes = [];
    if (this.id) attributes.push(`id="${this.id}"`);
    if (this.className) attributes.push(`class="${this.className}"`);
    for (const [name, value] of Object.entries(this.dataset)) attributes.push(`data-${name}="${value}"`);
    for (const [name, value] of Object.entries(this.attributes)) attributes.push(`${name}="${value}"`);
    if (this.hidden) attributes.push('hidden=""');
    const open = [this.tagName, ...attributes].join(" ");
    const text = this._text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    return `<${open}>${text}${this.children.map((c) => c.html()).join("")}</${this.tagName}>`;
  }
}

const byId = {};
const element = (id, tag) => (byId[id] = byId[id] || new Element(tag || "div", id));
const tables = { experiences: new Element("tbody"), quarantine: new Element("tbody"), decisions: new Element("tbody") };
const body = new Element("body");
const storage = { "memtrial-key": key };
const document = {
  title: "",
  body,
  getElementById: (id) => element(id),
  querySelector: (selector) => tables[selector.match(/^#(\w+) tbody$/)[1]],
  createElement: (tag) => new Element(tag),
  createElementNS: (_, tag) => new Element(tag),
};
const context = {
  document,
  location: { pathname: "/dashboard/" + encodeURIComponent(agentId), hash: "", origin: base },
  sessionStorage: { getItem: (k) => storage[k] ?? null, setItem: (k, v) => { storage[k] = v; } },
  history: { replaceState() {} },
  fetch: (path, options) => fetch(base + path, options),
  URLSearchParams,
  Promise,
  Error,
  Math,
  Number,
  Object,
  String,
};
vm.runInNewContext(fs.readFileSync(script, "utf8"), context);

const deadline = Date.now() + 60000;
(function poll() {
  if (body.dataset.ready) {
    const shown = ["agent-name", "error", "chain-status", "quarantine-empty"].map((id) => element(id).html());
    const rows = Object.entries(tables).map(([name, tbody]) => `<table id="${name}">${tbody.html()}</table>`);
    process.stdout.write(`<body data-ready="${body.dataset.ready}">${shown.join("")}${rows.join("")}</body>\n`);
  } else if (Date.now() > deadline) {
    process.stderr.write("the dashboard never became ready\n");
    process.exit(1);
  } else {
    setTimeout(poll, 20);
  }
})();
