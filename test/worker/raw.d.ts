/** Vite's `?raw` imports: a file's text (test/worker/ocm-fields.test.ts reads docs/ocm-compatibility.md so). */
declare module "*.md?raw" {
  const text: string;
  export default text;
}
