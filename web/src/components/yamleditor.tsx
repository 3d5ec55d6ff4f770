// A plain-text YAML editor: a monospace textarea and, when the text does
// not parse, the parser's message (line and column) below it. A textarea
// keeps the bundle small and works with every keyboard, screen reader and
// browser feature (undo, find, spell-check off); Tab moves focus as
// everywhere else.

export function YamlEditor(props: {
  id: string;
  label: string;
  text: string;
  error?: string;
  readOnly?: boolean;
  rows?: number;
  testid?: string;
  onText?: (text: string) => void;
}) {
  const errId = `${props.id}-error`;
  return (
    <div class="rv-yaml">
      <label for={props.id} class="rv-yaml-label">
        {props.label}
      </label>
      <textarea
        id={props.id}
        class="code"
        data-testid={props.testid ?? "yaml"}
        value={props.text}
        rows={props.rows}
        readOnly={props.readOnly}
        spellcheck={false}
        autocomplete="off"
        autocapitalize="off"
        aria-invalid={props.error ? "true" : undefined}
        aria-describedby={props.error ? errId : undefined}
        onInput={(e) => props.onText?.((e.currentTarget as HTMLTextAreaElement).value)}
      />
      {props.error && (
        <pre class="field-error rv-parse-error" id={errId} data-testid={`${props.testid ?? "yaml"}-error`} role="status">
          {props.error}
        </pre>
      )}
    </div>
  );
}
