// The API reference page (/docs): Swagger UI, from the installed package, on this service's OpenAPI document.
// A file of its own, not an inline script, so the page's Content-Security-Policy allows the service's own
// scripts and nothing else. No validator badge: it would send the document to an outside service.
"use strict";
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
