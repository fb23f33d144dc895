/**
 * The D1 backend of the store (src/store/store.ts): objects as rows of the D1 index
 * (src/store/d1/objects.ts), written through the one write path (src/store/d1/write.ts: the
 * kind's strategy, the commit with its outbox row, the after-commit hooks).
 */
import type { KindDefinition } from "../../k8s/kind.ts";
import type { Env } from "../../env.ts";
import type { Store } from "../types.ts";
import {
  d1Database,
  findByField,
  getObject,
  getObjects,
  listNameRangeDesc,
  listNameRangesDesc,
  listObjects,
  listObjectsNamed,
  listPage,
  previousEventObject,
  readEvents,
} from "./objects.ts";
import { writeStored, writeStoredMany } from "./write.ts";

/** The store of kind `def` on the D1 index of `env` (with its keyring, for kinds with encrypted fields). */
export function d1Backend(env: Env, def: KindDefinition): Store {
  const db = d1Database(env);
  const get = (namespace: string, name: string) => getObject(db, def, { namespace, name });
  return {
    def,
    get,
    getCommitted: get,
    getMany: (keys) => getObjects(db, def, keys),
    list: (namespace) => listObjects(db, def, namespace),
    listPage: (namespace, opts) => listPage(db, def, namespace, opts),
    listNamed: (name) => listObjectsNamed(db, def, name),
    findByField: (path, value) => findByField(db, def, path, value),
    listNameRange: (namespace, from, to, limit) => listNameRangeDesc(db, def, namespace, from, to, limit),
    listNameRanges: (ranges) => listNameRangesDesc(db, def, ranges),
    events: (namespace, afterRv, limit) => readEvents(db, def, namespace, afterRv, limit),
    eventBefore: (namespace, name, beforeRv) => previousEventObject(db, def, namespace, name, beforeRv),
    write: (namespace, name, req, opts = {}) =>
      writeStored(env, def, namespace, name ?? "", req, opts.extras, opts.known, opts.waitUntil, opts.mode, opts.audit, opts.namespaceAdmission),
    writeMany: (writes) => writeStoredMany(env, def, writes),
  };
}
