// toolscout dashboard: a small progressive layer over server-rendered pages (no framework).
// Elements with data-confirm ask before their form is sent; forms with data-autosubmit send
// themselves when a field changes; every fetch() POST carries the page's CSRF token.
"use strict";
(function () {
  const csrf = document.body ? document.body.dataset.csrf || "" : "";

  document.addEventListener("submit", (event) => {
    const form = event.target;
    const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
    if (question && !window.confirm(question)) {
      event.preventDefault();
    }
  });

  document.addEventListener("change", (event) => {
    const field = event.target;
    const form = field && field.form;
    if (form && form.dataset.autosubmit !== undefined) {
      form.requestSubmit();
    }
  });

  // For pages that call the dashboard from script: a POST with the session's CSRF token.
  window.toolscoutPost = function (url, body) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify(body),
    });
  };
})();
