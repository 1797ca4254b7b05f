// Perseus Vault inspector: the little the pages need beyond HTML. Nothing here reads or writes markup:
// memory text reaches the page escaped by the server, and this script only toggles classes and submits
// forms (the Content-Security-Policy allows this file and no inline script).
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  // A filter's choice applies at once.
  for (const select of document.querySelectorAll("select[data-submit=change]")) {
    select.addEventListener("change", () => select.form && select.form.requestSubmit());
  }
  // In the graph, pointing at a memory lights its links.
  const graph = document.querySelector("svg.graph");
  if (!graph) return;
  const edges = Array.from(graph.querySelectorAll("line.edge"));
  for (const node of graph.querySelectorAll("a[data-node]")) {
    const id = node.getAttribute("data-node");
    const mine = edges.filter((e) => e.getAttribute("data-from") === id || e.getAttribute("data-to") === id);
    node.addEventListener("mouseenter", () => {
      graph.classList.add("focus");
      mine.forEach((e) => e.classList.add("lit"));
    });
    node.addEventListener("mouseleave", () => {
      graph.classList.remove("focus");
      mine.forEach((e) => e.classList.remove("lit"));
    });
  }
});
