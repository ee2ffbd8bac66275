/* ragmeter view: the static bundle's queries table, built from the JSON embedded in the page. Every stored
   text goes in with textContent (never innerHTML), so a stored payload is shown, never run. */
(function () {
  "use strict";
  var node = document.getElementById("bundle-data");
  if (!node) { return; }
  var data = JSON.parse(node.textContent);
  var table = document.getElementById("bundle-queries");
  var textBox = document.getElementById("bundle-filter");
  var metricBox = document.getElementById("bundle-metric");
  var loBox = document.getElementById("bundle-lo");
  var hiBox = document.getElementById("bundle-hi");
  var count = document.getElementById("bundle-count");
  var detail = document.getElementById("bundle-detail");
  var state = { sort: "position", desc: false };
  var columns = ["query_id", "status"].concat(data.metrics);

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    if (cls && /(^| )text( |$)/.test(cls)) { e.dir = "auto"; }  /* right-to-left text stays in its box */
    return e;
  }
  function value(row, col) {
    if (col === "position") { return row.position; }
    if (col === "query_id" || col === "status") { return row[col]; }
    var v = row.values[col];
    return v === undefined ? null : v;
  }
  function shown(v) { return v === null ? "–" : (typeof v === "number" ? v.toFixed(4) : String(v)); }
  function compare(a, b) {
    var va = value(a, state.sort), vb = value(b, state.sort);
    if (va === null && vb === null) { return a.position - b.position; }
    if (va === null) { return 1; }   /* nulls last, both ways */
    if (vb === null) { return -1; }
    var c = va < vb ? -1 : (va > vb ? 1 : 0);
    if (state.desc) { c = -c; }
    return c !== 0 ? c : a.position - b.position;
  }
  function keep(row) {
    var t = textBox.value.trim().toLowerCase();
    if (t && row.query_id.toLowerCase().indexOf(t) < 0 && row.question.toLowerCase().indexOf(t) < 0) { return false; }
    var m = metricBox.value;
    if (m) {
      var v = value(row, m);
      var lo = loBox.value === "" ? null : Number(loBox.value);
      var hi = hiBox.value === "" ? null : Number(hiBox.value);
      if ((lo !== null || hi !== null) && v === null) { return false; }
      if (lo !== null && v < lo) { return false; }
      if (hi !== null && v > hi) { return false; }
    }
    return true;
  }
  function showDetail(row) {
    detail.textContent = "";
    var title = el("h2", "Query "); title.appendChild(el("bdi", row.query_id)); detail.appendChild(title);
    detail.appendChild(el("h3", "Question"));
    detail.appendChild(el("p", row.question, "text"));
    detail.appendChild(el("h3", "Reference answer"));
    detail.appendChild(el("p", row.reference === null ? "–" : row.reference, "text"));
    detail.appendChild(el("h3", "Answer"));
    detail.appendChild(el("p", row.answer === null ? "–" : row.answer, "text"));
    detail.appendChild(el("h3", "Retrieved documents"));
    var docs = el("table", null, "docs");
    var head = el("tr");
    ["rank", "doc id", "score", "text"].forEach(function (h) { head.appendChild(el("th", h)); });
    docs.appendChild(head);
    row.docs.forEach(function (d) {
      var tr = el("tr");
      tr.appendChild(el("td", d.rank, "num")); tr.appendChild(el("td", d.doc_id, "wrap"));
      tr.appendChild(el("td", d.score, "num")); tr.appendChild(el("td", d.text, "text"));
      docs.appendChild(tr);
    });
    var wrap = el("div", null, "scroll"); wrap.appendChild(docs); detail.appendChild(wrap);
    detail.appendChild(el("h3", "Judges"));
    row.judged.forEach(function (j) {
      var s = el("section", null, "judge");
      var h = el("h4"); h.appendChild(el("bdi", j.name)); h.appendChild(document.createTextNode(": " + j.value)); s.appendChild(h);
      if (j.error) { s.appendChild(el("p", "null: " + j.error, "error wrap")); }
      if (j.reason) { s.appendChild(el("p", j.reason, "text")); }
      detail.appendChild(s);
    });
  }
  function render() {
    var rows = data.rows.filter(keep).sort(compare);
    table.textContent = "";
    var thead = el("thead"), tr = el("tr");
    columns.forEach(function (c) {
      var th = el("th");
      var b = el("button", c + (state.sort === c ? (state.desc ? " ▼" : " ▲") : ""), "sort");
      b.type = "button";
      b.setAttribute("data-col", c);
      b.addEventListener("click", function () {
        if (state.sort === c) { state.desc = !state.desc; } else { state.sort = c; state.desc = false; }
        render();
      });
      th.appendChild(b); tr.appendChild(th);
    });
    thead.appendChild(tr); table.appendChild(thead);
    var body = el("tbody");
    rows.forEach(function (row) {
      var r = el("tr");
      r.setAttribute("data-query", row.query_id);
      var first = el("td"), a = el("a", row.query_id, "query-link");
      a.href = "#q";
      a.addEventListener("click", function (ev) { ev.preventDefault(); showDetail(row); });
      first.appendChild(a); r.appendChild(first);
      r.appendChild(el("td", row.status));
      data.metrics.forEach(function (m) {
        var td = el("td", shown(value(row, m)), "num");
        if (row.errors[m]) { td.title = row.errors[m]; }
        r.appendChild(td);
      });
      body.appendChild(r);
    });
    table.appendChild(body);
    count.textContent = rows.length + " of " + data.rows.length + " queries";
    document.documentElement.setAttribute("data-bundle-ready", "1");
  }
  [textBox, metricBox, loBox, hiBox].forEach(function (b) { b.addEventListener("input", render); });
  render();
})();
/* The query page: j / k step to the next / previous query in the queries page's order (the links carry it). */
(function () {
  "use strict";
  var next = document.getElementById("next-query");
  var prev = document.getElementById("prev-query");
  if (!next && !prev) { return; }
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) { return; }
    if (ev.key === "j" && next) { window.location.href = next.href; }
    else if (ev.key === "k" && prev) { window.location.href = prev.href; }
  });
})();
