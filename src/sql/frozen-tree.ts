/**
 * A syntax tree shared by every request that sends the same text is frozen, all the way down, so
 * no step of one request can change what another one reads: a step that would (a planner renaming
 * tables) throws at once instead, and works on its own copy.
 */
export function freezeTree<T>(tree: T): T {
  const pending: unknown[] = [tree];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null || Object.isFrozen(node)) continue;
    Object.freeze(node);
    for (const value of Object.values(node)) pending.push(value);
  }
  return tree;
}
