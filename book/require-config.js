/* benchsel: local configuration for the offline widget manager.
 *
 * Loaded (through myst-nb's `nb_ipywidgets_js`) after require.js and before
 * @jupyter-widgets/html-manager's embed-amd.js, all served from <site>/vendor/.
 *
 * 1. embed-amd.js resolves its own assets (fonts) as the AMD module path
 *    `@jupyter-widgets/html-manager/dist/...`, i.e. relative to the *page*.
 *    Map that module path to the vendored copy next to this script, so it
 *    works from every page depth and with no network.  The bundled widget
 *    modules (`@jupyter-widgets/controls`, ...) take their asset path from
 *    their own module id, i.e. `<page dir>/@jupyter-widgets/<font>`; map the
 *    bare `@jupyter-widgets` prefix to the same folder, where those fonts are.
 * 2. html-manager 1.0.x typesets widget labels with the MathJax 2 API
 *    `MathJax.Hub.Queue(["Typeset", MathJax.Hub, el])`, which does not exist
 *    in MathJax 3 (the page's MathJax) and throws.  Provide a small stand-in
 *    `Hub.Queue` that calls MathJax 3's `typesetPromise` instead, attached
 *    (non-enumerable, so MathJax never sees it as configuration) to whatever
 *    object `window.MathJax` is now or later becomes.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  var base = script ? script.src.replace(/[^\/]*$/, "") : "";  // .../vendor/
  if (window.requirejs && base) {
    window.requirejs.config({
      paths: {
        "@jupyter-widgets/html-manager/dist": base + "html-manager/dist",
        "@jupyter-widgets": base + "html-manager/dist"
      }
    });
  }

  function typeset(el) {
    var mj = window.MathJax;
    if (mj && mj.typesetPromise) {
      var ready = (mj.startup && mj.startup.promise) || Promise.resolve();
      ready.then(function () {
        return mj.typesetPromise(el ? [el] : undefined);
      }).catch(function (err) {
        console.warn("benchsel: MathJax typeset of a widget failed", err);
      });
    } else {
      // MathJax 3 not loaded yet: its initial typeset pass covers the page later.
      window.addEventListener("load", function () {
        var later = window.MathJax;
        if (later && later.typesetPromise) { typeset(el); }
      }, { once: true });
    }
  }

  var hub = {
    Queue: function () {
      for (var i = 0; i < arguments.length; i++) {
        var cmd = arguments[i];
        var el = Array.isArray(cmd) && cmd[0] === "Typeset" ? cmd[2] : undefined;
        typeset(el);
      }
    }
  };

  function attach(obj) {
    if (obj && typeof obj === "object" && !Object.prototype.hasOwnProperty.call(obj, "Hub")) {
      try {
        Object.defineProperty(obj, "Hub", {
          value: hub, enumerable: false, configurable: true, writable: true
        });
      } catch (e) { /* frozen object: nothing to do */ }
    }
    return obj;
  }

  var current = attach(window.MathJax);
  try {
    Object.defineProperty(window, "MathJax", {
      configurable: true,
      enumerable: true,
      get: function () { return current; },
      set: function (value) { current = attach(value); }
    });
  } catch (e) {
    // Fall back to attaching once the document is parsed.
    document.addEventListener("DOMContentLoaded", function () { attach(window.MathJax); });
  }
})();
