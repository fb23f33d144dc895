/**
 * Fields of an upstream schema (OCM's CRDs) that the hub serves but does not implement. The rule
 * (docs/ocm-compatibility.md): such a field is refused with 422 Invalid naming it, never stored
 * and ignored, unless its value asks for nothing the hub does not do (OCM's default, an empty
 * list), which is then accepted. The causes are worded as kube-apiserver words a value it does
 * not support (`field.NotSupported`, `field.Forbidden` of k8s.io/apimachinery validation).
 */
import type { z } from "zod";
import { addFieldErrors } from "./meta.ts";
import { fieldForbidden, fieldNotSupported } from "./validation.ts";

/**
 * A string field of which the hub implements only `supported` (OCM's default, typically): any
 * other value that `schema` allows is refused with `Unsupported value: "Score": supported
 * values: "ClusterName"` (reason FieldValueNotSupported, 422), as the apiserver refuses a value
 * outside an enum.
 *
 * @example
 * onlyValues(z.enum(["ClusterName", "Score"]), ["ClusterName"]) // spec.sortBy: Score → 422
 */
export function onlyValues<T extends z.ZodType<string>>(schema: T, supported: readonly string[]) {
  return schema.superRefine((v, ctx) => {
    if (!supported.includes(v)) addFieldErrors(ctx, v, [fieldNotSupported("", v, supported)]);
  });
}

/**
 * A list field the hub does not implement: an empty list (the same as none) is accepted, any item
 * is refused with `Forbidden: <why>` (reason FieldValueForbidden, 422). `why` says what is not
 * implemented and what to use instead.
 *
 * @example
 * onlyEmpty(z.array(z.string()), "JSON Pointers are not supported by this hub's work agent; use jsonPaths")
 */
export function onlyEmpty<T extends z.ZodType<unknown[]>>(schema: T, why: string) {
  return schema.superRefine((v, ctx) => {
    if (v.length > 0) addFieldErrors(ctx, v, [fieldForbidden("", why)]);
  });
}
