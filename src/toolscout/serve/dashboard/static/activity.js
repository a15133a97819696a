// The Activity page's live tail: asks /dashboard/activity/tail for what the audit log gained since
// the position the last answer gave, and appends those rows (as text, never as HTML) to the table,
// keeping at most data-max-rows of them. One request at a time, once a second; slower after a failure.
"use strict";
(function () {
  const table = document.getElementById("audit");
  if (!table) {
    return;
  }
  const body = table.tBodies[0];
  const state = document.getElementById("tail-state");
  const maxRows = Number(table.dataset.maxRows || "200");
  const filters = JSON.parse(table.dataset.filters || "{}");
  let position = table.dataset.position || "0-0";

  function addRow(row) {
    const tr = document.createElement("tr");
    tr.className = "outcome-" + row.outcome;
    for (const cell of row.cells) {
      const td = document.createElement("td");
      td.textContent = cell;
      tr.appendChild(td);
    }
    body.appendChild(tr);
    while (body.rows.length > maxRows) {
      body.deleteRow(0);
    }
    const empty = document.getElementById("audit-empty");
    if (empty) {
      empty.remove();
    }
  }

  async function poll() {
    let wait = 1000;
    try {
      const query = new URLSearchParams({ ...filters, after: position });
      const answer = await fetch(table.dataset.tail + "?" + query.toString(), { credentials: "same-origin" });
      if (!answer.ok) {
        throw new Error("HTTP " + answer.status);
      }
      const data = await answer.json();
      position = data.position;
      data.rows.forEach(addRow);
      table.dataset.position = position;
      if (state) {
        state.textContent = "following new executions";
      }
    } catch (error) {
      wait = 5000;
      if (state) {
        state.textContent = "not following (" + error.message + "); retrying";
      }
    }
    window.setTimeout(poll, wait);
  }
  window.setTimeout(poll, 1000);
})();
