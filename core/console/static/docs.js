// toolhost console: the API reference at /docs, rendered by Swagger UI
// (vendored, see vendor/VENDOR.md) from the server's /v1/openapi.json.
// It is loaded from a file, never inline, so the page keeps the console's
// strict Content-Security-Policy.
(function () {
  "use strict";
  window.SwaggerUIBundle({
    url: "/v1/openapi.json",
    dom_id: "#api-reference",
    // No deep links: Swagger UI puts them, links, inside the operations' buttons
    // (nested controls, which axe-core and screen readers refuse).
    deepLinking: false,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    // No validator badge: it would ask validator.swagger.io (offline).
    validatorUrl: null,
    tryItOutEnabled: false,
    persistAuthorization: false
  });
})();
