// Live tables: the DOM is kept and changed in place, never rebuilt per redraw.
//
// A live view redraws every few hundred ms while events flow. Rebuilding its table each time
// (200 rows of cells, links and badges) leaves thousands of detached nodes per redraw for the
// renderer's garbage collector, which lets them pile up: the tab's memory then grows with the event
// rate, not with what it shows. Here each row is kept by key (its <tr> and the string each cell
// was drawn from); a redraw computes the cells' strings and touches only the cells whose string
// changed, adds and removes only the rows that came and went, and moves only rows out of place.

import { h } from "./dom.js";

export const PAGE_SIZE = 200; // rows a table draws at once: DOM and layout stay small whatever the count

/**
 * A table whose rows are kept by `key(row)` (default: the row's uid). `columns` are
 * [title, value, render?]: value(row) gives the cell's string; render(value, row), when given, turns
 * it into the cell's node (a link, a badge), called only when the string changed. `rowAttrs(row)`
 * gives each <tr>'s attributes (set only when they change). `el` is the <table>.
 */
export class LiveTable {
  constructor(columns, { key = (r) => r.uid, rowAttrs, id } = {}) {
    this.columns = columns;
    this.key = key;
    this.rowAttrs = rowAttrs;
    this.tbody = h("tbody");
    this.el = h("table", { id }, h("thead", {}, h("tr", {}, columns.map(([title]) => h("th", {}, title)))), this.tbody);
    this.rows = new Map(); // key -> {tr, values}
  }

  /** Show `items`, in order. */
  update(items) {
    const wanted = new Set();
    for (const item of items) wanted.add(this.key(item));
    for (const [k, row] of this.rows) {
      if (!wanted.has(k)) {
        row.tr.remove();
        this.rows.delete(k);
      }
    }
    let at = this.tbody.firstChild;
    for (const item of items) {
      const k = this.key(item);
      let row = this.rows.get(k);
      if (row === undefined) {
        row = { tr: document.createElement("tr"), values: [] };
        for (let i = 0; i < this.columns.length; i++) row.tr.append(document.createElement("td"));
        this.rows.set(k, row);
      }
      this.draw(row, item);
      if (row.tr === at) at = at.nextSibling;
      else this.tbody.insertBefore(row.tr, at);
    }
  }

  draw(row, item) {
    const { tr, values } = row;
    for (let i = 0; i < this.columns.length; i++) {
      const [, value, render] = this.columns[i];
      const v = String(value(item) ?? "");
      if (i < values.length && values[i] === v) continue;
      values[i] = v;
      const td = tr.cells[i];
      if (render) td.replaceChildren(render(v, item));
      else if (td.firstChild && td.firstChild.nodeType === Node.TEXT_NODE && !td.firstChild.nextSibling) td.firstChild.data = v;
      else td.textContent = v;
    }
    if (this.rowAttrs) {
      for (const [name, raw] of Object.entries(this.rowAttrs(item))) {
        const v = String(raw);
        if (tr.getAttribute(name) !== v) tr.setAttribute(name, v);
      }
    }
  }
}

/**
 * A pager over a list drawn PAGE_SIZE rows at a time: `slice(rows)` clamps the current page to
 * the rows there are, updates the pager's text and buttons in place and returns the page's rows;
 * `el` shows only when there is more than one page. A button calls `redraw`.
 */
export class Pager {
  constructor(redraw, size = PAGE_SIZE) {
    this.page = 0;
    this.size = size;
    const move = (d) => () => {
      this.page += d;
      redraw();
    };
    this.prev = h("button", { type: "button", class: "prev", onclick: move(-1) }, "‹");
    this.next = h("button", { type: "button", class: "next", onclick: move(1) }, "›");
    this.text = document.createTextNode("");
    this.el = h("div", { class: "pager", hidden: true }, this.prev, this.text, this.next);
  }

  slice(rows) {
    const pages = Math.max(1, Math.ceil(rows.length / this.size));
    this.page = Math.min(Math.max(0, this.page), pages - 1);
    const first = this.page * this.size;
    const shown = rows.slice(first, first + this.size);
    this.el.hidden = pages === 1;
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page === pages - 1;
    const text = ` ${first + 1}–${first + shown.length} of ${rows.length} `;
    if (this.text.data !== text) this.text.data = text;
    return shown;
  }
}
