/**
 * A CSV field as RFC 4180 quotes it: in double quotes (its own doubled) when it holds a comma, a
 * quote, a line break, or leading/trailing space. A field a spreadsheet would run as a formula
 * (`=`, `+`, `-`, `@` first, not a number) is prefixed with a quote mark (OWASP's advice): key
 * names and memos are the customer's own text, and these files are opened in spreadsheets.
 */
export function csvField(value: string | number): string {
  // Numbers (counts, nano-credits) never need quoting: most of a row, written at once.
  if (typeof value === 'number') return String(value);
  let text = value;
  if (/^[=+\-@\t\r]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text)) text = `'${text}`;
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** CSV text from rows of fields, lines ended with CRLF as RFC 4180 writes them. */
export function csvText(rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  return rows.map((row) => row.map(csvField).join(',')).join('\r\n') + '\r\n';
}
