import type { OpenApiDocument, Operation } from './document.ts';

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function schemaText(schema: Record<string, unknown>): string {
  const type = schema.format === 'date-time' ? 'timestamp' : String(schema.type ?? 'any');
  const text = Array.isArray(schema.enum) ? `${type}: ${schema.enum.join(' | ')}` : type;
  const pattern = typeof schema.pattern === 'string' ? `, matching ${schema.pattern}` : '';
  return `${text}${pattern}${schema.default === undefined ? '' : `, default ${JSON.stringify(schema.default)}`}`;
}

function operationSection(path: string, method: string, operation: Operation): string {
  const parameters = operation.parameters
    .map(
      (p) =>
        `<tr><td><code>${escape(p.name)}</code></td><td>${p.in}</td><td>${p.required ? 'yes' : 'no'}</td><td>${escape(schemaText(p.schema))}</td><td>${escape(p.description)}</td></tr>`,
    )
    .join('');
  const body = operation.requestBody ? '<p>JSON body: the same parameters as the GET query string.</p>' : '';
  const responses = Object.entries(operation.responses)
    .map(([status, response]) => `<li><code>${status}</code> ${escape(response.description)}</li>`)
    .join('');
  return `<section>
<h3><span class="method">${method.toUpperCase()}</span> <code>${escape(path)}</code></h3>
<p>${escape(operation.description)}</p>
<table><thead><tr><th>Parameter</th><th>In</th><th>Required</th><th>Type</th><th>Description</th></tr></thead><tbody>${parameters}</tbody></table>
${body}<ul>${responses}</ul>
</section>`;
}

/** A self-contained HTML page (no scripts, no CDN) rendering the OpenAPI document. */
export function docsPage(document: OpenApiDocument): string {
  const sections = Object.entries(document.paths)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => operationSection(path, method, operation)))
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(document.info.title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.3rem .5rem;text-align:left;vertical-align:top}
code{background:#f4f4f4;padding:0 .2rem}.method{background:#225;color:#fff;padding:.1rem .4rem;border-radius:3px;font-size:.9em}
section{border-top:1px solid #ddd;margin-top:1.5rem}
</style></head><body>
<h1>${escape(document.info.title)}</h1>
<p>${escape(document.info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${document.openapi}). Errors have the body <code>{"error":{"code","message"}}</code>.</p>
${sections}
</body></html>
`;
}
