/* global print */
// What React Native adds to Hermes and the SDK relies on: console, FormData (append only, files
// as { uri, name, type }), and navigator.product. Nothing else is provided here.
var console = { log: print, warn: print, error: print, info: print, debug: function () {} };
globalThis.console = console;
globalThis.navigator = { product: 'ReactNative' };
globalThis.FormData = function FormData() {
  this.parts = [];
};
globalThis.FormData.prototype.append = function (name, value) {
  this.parts.push([name, value]);
};
