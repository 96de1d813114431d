// stepwise dashboard: follows a run's page live over server-sent events.
// The pages work without it; it updates the status, the graph's steps and
// the timeline as the run moves, and reloads the question when it pauses.
"use strict";

(function () {
  var run = document.getElementById("run");
  if (!run || run.dataset.live !== "true" || !window.EventSource) {
    return;
  }
  var id = run.dataset.run;
  var base = "/runs/" + encodeURIComponent(id);
  var timeline = document.getElementById("timeline");
  var statusBox = document.getElementById("run-status");
  var stepStatus = {
    "step.started": "running",
    "step.succeeded": "succeeded",
    "step.failed": "failed",
    "step.skipped": "skipped",
    "step.answered": "succeeded",
    "compensation.succeeded": "compensated",
    "compensation.failed": "failed",
    "run.paused": "waiting"
  };

  function setStep(step, status) {
    var nodes = document.querySelectorAll("#graph [data-step]");
    for (var i = 0; i < nodes.length; i++) {
      var g = nodes[i];
      if (g.getAttribute("data-step") !== step) {
        continue;
      }
      g.setAttribute("data-status", status);
      var cls = (g.getAttribute("class") || "").replace(/\bstatus-\S+/g, "").trim();
      g.setAttribute("class", (cls + " status-" + status).trim());
    }
  }

  function badge(status) {
    var s = document.createElement("span");
    s.className = "badge status-" + status;
    s.textContent = status;
    return s;
  }

  function addEvent(ev) {
    if (!timeline) {
      return;
    }
    if (ev.seq && timeline.querySelector('li[data-seq="' + ev.seq + '"]')) {
      return;
    }
    var li = document.createElement("li");
    if (ev.seq) {
      li.setAttribute("data-seq", String(ev.seq));
    }
    var t = document.createElement("time");
    t.textContent = ev.at || "";
    var kind = document.createElement("span");
    kind.className = "ev";
    kind.textContent = ev.type;
    li.appendChild(t);
    li.appendChild(document.createTextNode(" "));
    li.appendChild(kind);
    if (ev.step_id) {
      var c = document.createElement("code");
      c.textContent = ev.step_id;
      li.appendChild(document.createTextNode(" "));
      li.appendChild(c);
    }
    if (ev.data) {
      var d = document.createElement("span");
      d.className = "data";
      d.textContent = ev.data;
      li.appendChild(document.createTextNode(" "));
      li.appendChild(d);
    }
    timeline.appendChild(li);
  }

  // refresh replaces the live part (question, outputs, steps) with the
  // server's rendering of it.
  var refreshing = null;
  function refresh() {
    if (refreshing) {
      return refreshing;
    }
    refreshing = fetch(base + "?fragment=live", { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        var live = document.getElementById("live");
        var form = document.getElementById("answer-form");
        var typing = form && form.contains(document.activeElement);
        if (html !== null && live && !typing) {
          live.innerHTML = html;
        }
      })
      .catch(function () {})
      .then(function () { refreshing = null; });
    return refreshing;
  }

  var source = new EventSource(base + "/events?after=" + encodeURIComponent(run.dataset.seq || "0"));
  var last = null;
  source.onmessage = function (m) {
    var ev;
    try {
      ev = JSON.parse(m.data);
    } catch (e) {
      return;
    }
    if (ev.kind === "event") {
      addEvent(ev);
      if (ev.step_id && stepStatus[ev.type]) {
        setStep(ev.step_id, stepStatus[ev.type]);
      }
      return;
    }
    if (ev.kind === "status") {
      if (statusBox) {
        statusBox.replaceChildren(badge(ev.status));
      }
      run.setAttribute("data-status", ev.status);
      if (last !== null && last !== ev.status) {
        refresh();
      }
      last = ev.status;
      if (ev.status === "succeeded" || ev.status === "failed" || ev.status === "canceled") {
        source.close();
        refresh();
      }
    }
  };
})();
