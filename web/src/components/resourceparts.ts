// The resource view's heavy parts (the schema form, the YAML editor and the
// yaml package, the diffs and jsdiff, history), in one chunk that Vite
// splits off: the other views' first load does not carry them.
export { Editor, WrittenNote } from "./editor";
export { History } from "./history";
