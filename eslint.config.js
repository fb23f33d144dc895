import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", ".wrangler/", "migrations/", "worker-configuration.d.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: "readonly",
        console: "readonly",
        setTimeout: "readonly",
        clearTimeout: "readonly",
        URL: "readonly",
        fetch: "readonly",
        Response: "readonly",
        Request: "readonly",
        crypto: "readonly",
        TextEncoder: "readonly",
        Buffer: "readonly",
        AbortController: "readonly",
        setInterval: "readonly",
        clearInterval: "readonly",
        performance: "readonly",
      },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
    },
  },
  {
    // Type-aware rules: a promise nobody awaits (a Durable Object's write that outlives its
    // request, a rejection nobody sees) is an error, and so is a promise where a value is expected.
    files: ["**/*.ts", "**/*.tsx"],
    ignores: ["*.config.ts"],
    languageOptions: {
      parserOptions: { project: ["./tsconfig.json", "./agent/tsconfig.json", "./src/ui/app/tsconfig.json"], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
    },
  },
  {
    // Raw D1 (`env.DB`) only in the store (src/store, src/db): every read and write goes through
    // the Store and its Storage (the audit log, the hub's secrets, the Events' expiry index and the
    // fleet gauges' aggregates too: src/store/d1); the layer rules (.dependency-cruiser.js,
    // `npm run lint:layers`) keep the imports. No file is exempt.
    files: ["src/**/*.ts", "durable-objects/**/*.ts"],
    ignores: ["src/store/**", "src/db/**"],
    rules: {
      "no-restricted-syntax": [
        "error",
        { selector: "MemberExpression[property.name='DB']", message: "raw D1 (env.DB) outside src/store: read and write through the Store (src/store)" },
      ],
    },
  },
);
