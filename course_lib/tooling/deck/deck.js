/* Fit every slide of a chapter's deck to the slide (1280 x 720), then start reveal.js.

   Measured in the browser that shows the deck, with its fonts, before reveal.js scales it:
   1. a code block or table wider than the slide is shrunk (to at most MIN_SCALE of its size,
      and never under MIN_PX), then wrapped if it is still wider: no line is cut at the right;
   2. a slide a little taller than the slide (at most 1 / MIN_SCALE) is shrunk to fit, so an
      output and the sentence that explains it stay together, as long as no text on it gets
      smaller than MIN_PX (readable from the back of a room): else it is split;
   3. a slide taller than that is split: what does not fit moves to a continuation slide
      under the same heading ("… (continued)"), between cells when a cell fits a slide of its
      own, else between the lines of a code block or the rows of a table.
   The deck records what it did on <html>: data-course-continued (continuation slides made),
   data-course-shrunk (slides shrunk) and data-course-unfit (slides it could not fit, which the
   slides check then finds taller than the slide). */
(function () {
  "use strict";
  var W = 1280, H = 720, MIN_SCALE = 0.8, MIN_PX = 16;
  var UNSPLITTABLE = "unsplittable";

  function leaves() {
    return Array.prototype.filter.call(document.querySelectorAll(".reveal .slides section"),
      function (s) { return !s.querySelector("section"); });
  }
  function px(el, prop) { return parseFloat(getComputedStyle(el)[prop]) || 0; }
  function bottom(el) { return el.getBoundingClientRect().bottom; }
  function height(el) { return el.getBoundingClientRect().height; }
  function shell(el) {  // an empty copy of el: same tag, classes and style, no id
    var copy = el.cloneNode(false);
    copy.removeAttribute("id");
    return copy;
  }

  // The smallest text on `el`, in the slide's own pixels (its font size times the zoom it is under).
  function smallestText(el) {
    var walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), node, least = Infinity;
    while ((node = walk.nextNode())) {
      var parent = node.parentElement;
      if (!node.textContent.trim() || !parent || !parent.getClientRects().length) continue;
      least = Math.min(least, px(parent, "fontSize") * (parent.currentCSSZoom || 1));
    }
    return least;
  }

  function fitWidth(slide) {
    var right = slide.getBoundingClientRect().right - px(slide, "paddingRight");
    var blocks = slide.querySelectorAll("pre, table");
    for (var i = 0; i < blocks.length; i++) {
      var el = blocks[i];
      var over = function () {
        return el.scrollWidth > el.clientWidth + 1 || el.getBoundingClientRect().right > right + 0.5;
      };
      if (!over()) continue;
      var start = px(el, "fontSize"), size = start, least = Math.max(start * MIN_SCALE, MIN_PX);
      while (over() && size - 0.5 >= least) {
        size -= 0.5;
        el.style.fontSize = size + "px";
      }
      el.classList.add("course-scaled");
      if (over()) el.classList.add("course-wrapped");
    }
  }

  // Split a <pre> at the last whole line above `limit`: the lines below go to the returned copy.
  function splitPre(pre, limit) {
    var lines = [[]];
    Array.prototype.slice.call(pre.childNodes).forEach(function (node) {
      var parts = node.textContent.split("\n");
      parts.forEach(function (part, k) {
        if (k > 0) lines.push([]);
        if (!part) return;
        var piece = node.nodeType === 3 ? document.createTextNode(part) : node.cloneNode(false);
        if (node.nodeType !== 3) piece.textContent = part;
        lines[lines.length - 1].push(piece);
      });
    });
    if (lines.length && !lines[lines.length - 1].length) lines.pop();
    pre.textContent = "";
    var spans = lines.map(function (nodes) {
      var span = document.createElement("span");
      span.className = "course-line";
      nodes.forEach(function (n) { span.appendChild(n); });
      pre.appendChild(span);
      pre.appendChild(document.createTextNode("\n"));
      return span;
    });
    var fit = 0;
    while (fit < spans.length) {
      var rects = spans[fit].getClientRects();
      var last = rects.length ? rects[rects.length - 1].bottom : spans[fit].getBoundingClientRect().bottom;
      if (last + px(pre, "paddingBottom") > limit) break;
      fit++;
    }
    if (fit === 0) return UNSPLITTABLE;
    if (fit === spans.length) return null;
    var rest = shell(pre);
    spans.slice(fit).forEach(function (span) {
      var newline = span.nextSibling;
      rest.appendChild(span);
      if (newline) rest.appendChild(newline);
    });
    return rest;
  }

  function splitTable(table, limit) {
    var body = table.tBodies[0];
    if (!body) return UNSPLITTABLE;
    var rows = Array.prototype.slice.call(body.rows);
    var i = 0;
    while (i < rows.length && bottom(rows[i]) <= limit) i++;
    if (i === 0) return UNSPLITTABLE;
    if (i === rows.length) return null;
    var rest = shell(table);
    if (table.tHead) rest.appendChild(table.tHead.cloneNode(true));
    var restBody = shell(body);
    rows.slice(i).forEach(function (r) { restBody.appendChild(r); });
    rest.appendChild(restBody);
    return rest;
  }

  // What of `el` does not fit above `limit`: null (all of it fits), UNSPLITTABLE (none of it
  // can stay), or a copy of `el` holding the part that moves on. `fresh`: the height a
  // continuation slide offers, so a child that fits one moves whole instead of being cut.
  function split(el, limit, fresh, keep) {
    if (bottom(el) <= limit) return null;
    if (el.tagName === "PRE") return splitPre(el, limit);
    if (el.tagName === "TABLE") return splitTable(el, limit);
    var kids = Array.prototype.slice.call(el.children);
    if (!kids.length) return UNSPLITTABLE;  // a paragraph, an image: it moves whole or stays
    var i = 0;
    while (i < kids.length && (height(kids[i]) === 0 || bottom(kids[i]) <= limit)) i++;
    if (i === kids.length) return null;  // only el's own padding or margin overflows
    var rest = shell(el), moved;
    if (i > keep && height(kids[i]) <= fresh) {
      moved = kids.slice(i);
    } else {
      var part = split(kids[i], limit, fresh, 0);
      if (part === UNSPLITTABLE || part === null) {
        if (i <= keep) return UNSPLITTABLE;
        moved = kids.slice(i);
      } else {
        rest.appendChild(part);
        moved = kids.slice(i + 1);
      }
    }
    if (el.tagName === "OL") rest.setAttribute("start", (el.start || 1) + i);
    moved.forEach(function (k) { rest.appendChild(k); });
    return rest;
  }

  // A slide at most 1 / MIN_SCALE times too tall is shrunk instead of split: an output and
  // the sentence that explains it stay on one slide.
  function shrink(slide) {
    var kids = Array.prototype.slice.call(slide.children);
    var floor = Math.max(MIN_SCALE, MIN_PX / smallestText(slide));
    for (var zoom = 0.98; zoom >= floor - 1e-9; zoom -= 0.02) {
      kids.forEach(function (k) { k.style.zoom = zoom.toFixed(2); });
      if (slide.scrollHeight <= H) { slide.classList.add("course-shrunk"); return true; }
    }
    kids.forEach(function (k) { k.style.zoom = ""; });
    return false;
  }

  function title(slide) {
    if (slide.dataset.courseTitle) return slide.dataset.courseTitle;
    var h = slide.querySelector("h1, h2, h3, h4");
    return h ? h.textContent.replace(/¶$/, "").trim() : "";
  }

  function fitDeck() {
    var root = document.documentElement, continued = 0, unfit = 0, shrunk = 0;
    root.classList.add("course-measuring");
    var queue = leaves();
    queue.forEach(fitWidth);
    while (queue.length) {
      var slide = queue.shift();
      var pad = px(slide, "paddingBottom");
      var top = slide.getBoundingClientRect().top;
      if (slide.scrollHeight <= H) continue;
      if (!slide.classList.contains("course-continuation") && shrink(slide)) { shrunk++; continue; }
      var isContinued = slide.classList.contains("course-continuation");
      var head = isContinued ? slide.firstElementChild : null;
      var fresh = H - px(slide, "paddingTop") - pad - (head ? height(head) + 6 : 40);
      var rest = split(slide, top + H - pad, fresh, isContinued ? 1 : 0);
      if (rest === null || rest === UNSPLITTABLE) { unfit++; continue; }
      var name = title(slide);
      rest.dataset.courseTitle = name;
      rest.classList.add("course-continuation");
      var note = document.createElement("p");
      note.className = "course-continued";
      note.textContent = name + " (continued)";
      rest.insertBefore(note, rest.firstChild);
      slide.parentNode.insertBefore(rest, slide.nextSibling);
      continued++;
      queue.unshift(rest);
    }
    root.classList.remove("course-measuring");
    root.dataset.courseContinued = String(continued);
    root.dataset.courseUnfit = String(unfit);
    root.dataset.courseShrunk = String(shrunk);
  }

  // No arrows on the slide (they would cover its last line): keys, a clicker or a swipe move on.
  function start() {
    fitDeck();
    Reveal.initialize({
      width: W, height: H, margin: 0.02, center: false, hash: true, controls: false,
      progress: true, slideNumber: "c/t", transition: "none", plugins: []
    }).then(function () { document.documentElement.dataset.courseDeck = "ready"; });
  }

  var fonts = document.fonts;
  var loads = fonts ? [fonts.load('22px "Source Sans Pro"'), fonts.load('bold 22px "Source Sans Pro"')] : [];
  Promise.all(loads).catch(function () {}).then(function () { return fonts && fonts.ready; }).then(start, start);
})();
