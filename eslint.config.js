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
    // Storage, controllers and Durable Objects never import the HTTP layer (src/api).
    files: ["src/store/**", "src/k8s/**", "src/kinds/**", "src/work/**", "src/placement/**", "src/scheduling/**", "durable-objects/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^(\\.\\./)+(src/)?api/", message: "storage, controllers and Durable Objects must not import the HTTP layer (src/api)" }] },
      ],
    },
  },
);
