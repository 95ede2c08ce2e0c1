// memtrial's read-only agent page: everything it shows comes from the REST API with the tenant's key.
(function () {
  "use strict";
  const agentId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
  const agentPath = "/v1/agents/" + encodeURIComponent(agentId);  // encoded again: the id is one path segment
  const Z90 = 1.6448536269514722;

  function storedKey() {
    const fragment = new URLSearchParams(location.hash.slice(1));
    if (fragment.get("key")) {
      sessionStorage.setItem("memtrial-key", fragment.get("key"));
      history.replaceState(null, "", location.pathname);  // the key leaves the address bar
    }
    return sessionStorage.getItem("memtrial-key");
  }

  async function api(path) {
    const response = await fetch(path, { headers: { Authorization: "Bearer " + storedKey() } });
    const body = await response.json();
    if (!response.ok) {
      const error = new Error(body.error ? body.error.message : response.statusText);
      error.status = response.status;
      throw error;
    }
    return body;
  }

  async function all(path, limit) {
    const items = [];
    let cursor = null;
    do {
      const page = await api(path + (path.includes("?") ? "&" : "?") + "limit=" + limit + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
      items.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    return items;
  }

  function cell(row, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function svg(name, attributes) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", name);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
    return node;
  }

  // utility per decision, the REST number itself, to five decimals (memtrial.outcomes.display.format_utility);
  // what rounds to zero reads 0.00000 (never -0.00000) and takes no colour
  function utility(value) {
    const shown = value.toFixed(5);
    return Number(shown) === 0 ? (0).toFixed(5) : shown;
  }
  function sign(value) {
    const shown = Number(utility(value));
    return shown > 0 ? "positive" : shown < 0 ? "negative" : "";
  }

  function renderExperiences(values, texts) {
    const rows = Object.entries(values.values).map(([id, v]) => {
      // the API's interval, or one from its sd; none while the sd is missing (no noise scale yet, nothing learnt):
      // a point interval would read as certainty
      const known = v.lower != null && v.upper != null;
      const lower = known ? v.lower : v.sd > 0 ? v.mean - Z90 * v.sd : null;
      const upper = known ? v.upper : v.sd > 0 ? v.mean + Z90 * v.sd : null;
      return { id, text: texts[id] || v.text || v.label || id, n: v.n, mean: v.mean, lower, upper, status: v.status };
    }).sort((a, b) => b.mean - a.mean);
    const reach = (r) => (r.lower == null ? Math.abs(r.mean) : Math.max(Math.abs(r.lower), Math.abs(r.upper)));
    const span = Math.max(1e-12, ...rows.map(reach));
    const body = document.querySelector("#experiences tbody");
    document.getElementById("experiences-empty").hidden = rows.length > 0;
    rows.forEach((r, i) => {
      const row = document.createElement("tr");
      row.dataset.experience = r.id;
      cell(row, String(i + 1), "num");
      const text = cell(row, r.text);
      if (r.status === "quarantined" || r.status === "retired") {  // neither is retrieved: say so beside its value
        const tag = document.createElement("span");
        tag.className = "tag " + r.status;
        tag.textContent = r.status;
        text.appendChild(tag);
      }
      cell(row, String(r.n), "num");
      cell(row, utility(r.mean), "num " + sign(r.mean));
      cell(row, r.lower == null ? "–" : "[" + utility(r.lower) + ", " + utility(r.upper) + "]", "num");
      const bar = cell(row, "", "bar");
      const chart = svg("svg", { viewBox: "0 0 180 16", class: "interval" });
      const x = (v) => 90 + (85 * v) / span;
      chart.appendChild(svg("line", { x1: 90, x2: 90, y1: 0, y2: 16, stroke: "#d8dde7" }));
      if (r.lower != null) {
        chart.appendChild(svg("rect", { x: x(r.lower), y: 5, width: Math.max(1, x(r.upper) - x(r.lower)), height: 6, fill: "#c9d6f7" }));
      }
      chart.appendChild(svg("circle", { cx: x(r.mean), cy: 8, r: 4, fill: r.mean >= 0 ? "#1a7f37" : "#b42318" }));
      bar.appendChild(chart);
      body.appendChild(row);
    });
  }

  // an e-value or threshold: whole above 100, else three significant digits
  function evidence(value) {
    if (value == null) return "–";
    return value >= 100 ? value.toFixed(0) : String(Number(value.toPrecision(3)));
  }

  // the request that releases a quarantined experience: this page only shows it (it stays read-only)
  function releaseRequest(experienceId) {
    const path = agentPath + "/experiences/" + encodeURIComponent(experienceId) + "/release";
    return "curl -X POST " + (location.origin || "") + path + ' -H "Authorization: Bearer $MEMTRIAL_API_KEY"' +
      " -H 'Content-Type: application/json' -d '{\"reason\": \"why it may be retrieved again\"}'";
  }

  function renderQuarantine(agent, experiences, decisions) {
    const quarantined = experiences.filter((e) => e.status === "quarantined");
    const when = Object.fromEntries(decisions.map((d) => [d.decision_id, d.decision_time]));
    const empty = document.getElementById("quarantine-empty");
    empty.hidden = quarantined.length > 0;
    if (agent.quarantine && !agent.quarantine.enabled) {
      empty.textContent = "Quarantine is off for this agent (setting quarantine.enabled): no experience is tested.";
    } else if (agent.quarantine) {
      empty.textContent = "No experience is in quarantine (level " + agent.quarantine.level + ").";
    }
    const body = document.querySelector("#quarantine tbody");
    quarantined.forEach((e) => {
      const q = e.quarantine || {};
      const row = document.createElement("tr");
      row.dataset.quarantined = e.id;
      cell(row, e.text);
      cell(row, evidence(q.e_value), "num");
      cell(row, evidence(q.threshold), "num");
      cell(row, q.n == null ? "–" : String(q.n), "num");
      cell(row, q.mean == null ? "–" : utility(q.mean), "num " + (q.mean == null ? "" : sign(q.mean)));
      const at = q.date == null ? "–" : (when[q.date] ? when[q.date].replace("T", " ").slice(0, 16) + " · " : "") + q.date;
      cell(row, at, "id");
      body.appendChild(row);
      const release = document.createElement("tr");
      release.className = "release";
      const td = cell(release, "release by hand: ");
      td.setAttribute("colspan", 6);
      const code = document.createElement("code");
      code.textContent = releaseRequest(e.id);
      td.appendChild(code);
      body.appendChild(release);
    });
  }

  function renderTrust(agent, trust) {
    const chart = document.getElementById("trust-chart");
    const anytime = agent.gate.test === "anytime";
    const dial = agent.action === "dial";
    const logOneOverAlpha = Math.log(1 / agent.gate.alpha);
    const points = trust.scores.filter((s) => s.statistic != null).map((s, i) => {
      const value = dial || anytime ? Math.log(s.statistic) / logOneOverAlpha : 1 - s.statistic;
      return { x: i, y: Math.min(1, Math.max(0, value)) };
    });
    const label = dial ? "trust weight ω = clip(log e-value / log(1/α), 0, 1)" : anytime ? "log e-value / log(1/α) (1: gate open)" : "1 − p-value (gate opens at 1 − α)";
    document.getElementById("trust-summary").textContent =
      "Gate " + agent.gate.test + " (α = " + agent.gate.alpha + "), action " + agent.action + ": " + trust.state.status.replace("_", " ") +
      " after " + trust.n_scores + " scores. Plotted: " + label + ".";
    const width = 720, height = 220, left = 40, top = 12, bottom = 28;
    chart.appendChild(svg("line", { x1: left, x2: width - 8, y1: height - bottom, y2: height - bottom, stroke: "#5c667a" }));
    chart.appendChild(svg("line", { x1: left, x2: left, y1: top, y2: height - bottom, stroke: "#5c667a" }));
    const threshold = dial || anytime ? 1 : 1 - agent.gate.alpha;
    const y = (v) => height - bottom - v * (height - bottom - top);
    chart.appendChild(svg("line", { x1: left, x2: width - 8, y1: y(threshold), y2: y(threshold), stroke: "#1a7f37", "stroke-dasharray": "4 4" }));
    for (const tick of [0, 0.5, 1]) {
      const text = svg("text", { x: 6, y: y(tick) + 4, "font-size": 11, fill: "#5c667a" });
      text.textContent = tick.toFixed(1);
      chart.appendChild(text);
    }
    document.getElementById("trust-empty").hidden = points.length > 0;
    if (points.length) {
      const step = (width - 8 - left) / Math.max(1, points.length - 1);
      const path = points.map((p, i) => (i ? "L" : "M") + (left + p.x * step).toFixed(1) + " " + y(p.y).toFixed(1)).join(" ");
      chart.appendChild(svg("path", { d: path, fill: "none", stroke: "#2f5bd3", "stroke-width": 2.5, id: "trust-line" }));
    }
    const caption = svg("text", { x: left, y: height - 8, "font-size": 11, fill: "#5c667a" });
    caption.textContent = "scored decisions (oldest → newest), " + points.length + " shown";
    chart.appendChild(caption);
  }

  function renderDecisions(decisions) {
    const body = document.querySelector("#decisions tbody");
    document.getElementById("decisions-empty").hidden = decisions.length > 0;
    decisions.slice().reverse().forEach((d) => {
      const row = document.createElement("tr");
      cell(row, d.decision_id, "id");
      cell(row, d.decision_time.replace("T", " ").slice(0, 16));
      // a corrected outcome is marked: its utility is the corrected one (GET .../decisions/{id} shows each correction)
      const corrected = d.corrections ? ", corrected" + (d.corrections > 1 ? " ×" + d.corrections : "") : "";
      cell(row, d.status + corrected + (d.failure ? " (" + d.failure + ")" : ""));
      cell(row, d.action || "–");
      cell(row, d.chosen_utility == null ? "–" : utility(d.chosen_utility), "num");
      body.appendChild(row);
    });
  }

  async function show() {
    const error = document.getElementById("error");
    const loading = document.getElementById("loading");
    loading.hidden = false;
    try {
      const agent = await api(agentPath);
      document.getElementById("agent-name").textContent = agent.name;
      document.title = agent.name + " · memtrial";
      document.getElementById("agent-summary").textContent =
        (agent.kind === "scored" ? "scored decisions" : agent.investor + " portfolio of " + agent.universe.length + " assets") +
        " · design " + agent.design + " · learner " + agent.learner + " · credit " + agent.credit;
      const [values, experiences, quarantined, trust, decisions, verified] = await Promise.all([
        api(agentPath + "/values"),
        all(agentPath + "/experiences", 200),
        all(agentPath + "/experiences?status=quarantined", 200),
        api(agentPath + "/trust?limit=1000"),
        all(agentPath + "/decisions", 200),
        api(agentPath + "/trust/verify"),
      ]);
      const texts = Object.fromEntries(experiences.map((e) => [e.id, e.text]));
      const badge = document.getElementById("chain-status");
      badge.textContent = verified.ok ? "chain intact · " + verified.n_entries + " entries" : "chain BROKEN at entry " + verified.first_invalid;
      badge.className = "badge " + (verified.ok ? "ok" : "broken");
      renderTrust(agent, trust);
      renderExperiences(values, texts);
      renderQuarantine(agent, quarantined, decisions);
      renderDecisions(decisions);
      loading.hidden = true;
      document.getElementById("content").hidden = false;
      document.body.dataset.ready = "true";
    } catch (failure) {
      loading.hidden = true;
      error.textContent = failure.status === 401 ? "This key is not valid here: " + failure.message : failure.message;
      error.hidden = false;
      if (failure.status === 401) askForKey();
      document.body.dataset.ready = "error";
    }
  }

  function askForKey() {
    const form = document.getElementById("key-form");
    form.hidden = false;
    form.onsubmit = (event) => {
      event.preventDefault();
      sessionStorage.setItem("memtrial-key", document.getElementById("key-input").value.trim());
      form.hidden = true;
      document.getElementById("error").hidden = true;
      show();
    };
  }

  if (storedKey()) show(); else askForKey();
})();
