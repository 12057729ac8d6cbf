// The renderer of loom's HTML reports (src/report/html_report.h). It reads the page's #loom-data
// JSON and draws each view with canvas (the Gantt, which may hold 10^5 tasks) and SVG (the rest).
// No library, no network. What it drew is recorded for tests: each <section data-drawn="N">, and
// <body data-rendered="1"> at the end; any script error is counted in #errors[data-errors].
"use strict";
(function () {
  const errorBox = document.getElementById("errors");
  let errorCount = 0;
  function reportError(message) {
    errorCount += 1;
    errorBox.dataset.errors = String(errorCount);
    errorBox.textContent += message + "\n";
  }
  window.onerror = function (message, source, line) {
    reportError("error: " + message + " (line " + line + ")");
  };
  window.addEventListener("unhandledrejection", function (e) {
    reportError("error: " + e.reason);
  });

  const SVG_NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                   "#9c755f", "#bab0ac"];
  // Pass kernels by their pass (F forward, B backward or input gradient, W weight gradient, R
  // recompute); other tasks by their category.
  const PASS_COLORS = {F: "#4e79a7", B: "#59a14f", W: "#8cd17d", R: "#b6992d"};
  const CATEGORY_COLORS = {tp: "#f28e2b", "tp overlapped": "#ffbe7d", pp: "#e15759", dp: "#b07aa1",
                           optimizer: "#9c755f", cp: "#ff9da7", offload: "#76b7b2", host: "#bab0ac"};

  function element(tag, parent, attributes, text) {
    const node = document.createElement(tag);
    for (const key in attributes || {}) node.setAttribute(key, attributes[key]);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function svgElement(tag, parent, attributes, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const key in attributes || {}) node.setAttribute(key, attributes[key]);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function heading(parent, text) {
    return element("h3", parent, {style: "font-size:13px;margin:10px 0 2px"}, text);
  }
  function seconds(s) {
    if (s === null || s === undefined) return "-";
    const a = Math.abs(s);
    if (a >= 1 || a === 0) return s.toFixed(3) + " s";
    if (a >= 1e-3) return (s * 1e3).toFixed(2) + " ms";
    return (s * 1e6).toFixed(1) + " \u00b5s";
  }
  function gib(bytes) {
    const g = bytes / 1073741824;
    return (Math.abs(g - Math.round(g)) < 1e-9 ? g.toFixed(0) : g.toFixed(2)) + " GiB";
  }
  function percent(fraction) {
    return fraction === null || fraction === undefined ? "-" : (fraction * 100).toFixed(1) + " %";
  }
  function label(name) { return name.replace(/_s$/, "").replace(/_/g, " "); }
  function largest(values, floor) {
    return values.reduce(function (m, v) { return v > m ? v : m; }, floor);
  }
  // Round ticks (steps of 1, 2 or 5 times a power of ten) on an axis from |min| (0 if not given) to |max|.
  function ticks(max, count, min) {
    min = min || 0;
    if (!(max > min)) return [min];
    const raw = (max - min) / count, power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map(function (m) { return m * power; }).find(function (s) { return s >= raw; });
    const out = [];
    for (let k = Math.ceil(min / step); k * step <= max + (max - min) * 1e-4; k++) out.push(k * step);
    return out;
  }
  const tooltip = document.getElementById("tooltip");
  function showTooltip(event, text) {
    tooltip.textContent = text;
    tooltip.style.display = "block";
    tooltip.style.left = (event.clientX + 12) + "px";
    tooltip.style.top = (event.clientY + 12) + "px";
  }
  function hideTooltip() { tooltip.style.display = "none"; }
  function legend(parent, entries) {
    const box = element("div", parent, {class: "legend"});
    entries.forEach(function (entry) {
      const item = element("span", box);
      element("i", item, {style: "background:" + entry[1]});
      item.appendChild(document.createTextNode(entry[0]));
    });
  }

  // The Gantt: a canvas per timeline, one row per stream that runs a task of some duration, rows
  // grouped by rank and named as the trace names them; every row labelled at any size (a canvas
  // grows with its rows); compute coloured by pass, lighter for later model chunks, micro-batches
  // alternating in shade; zoom with the wheel or the buttons, pan by dragging, double-click to see
  // the whole step.
  const MAX_ROWS = 1024, ROW_HEIGHT = 12, LABEL_WIDTH = 300;
  function renderGantt(section, data) {
    const tasks = data.tasks, names = data.names, count = tasks.stream.length;
    const used = new Array(data.streams.length).fill(false);
    data.timelines.forEach(function(t) {
      for (let i = 0; i < count; i++)
        if (t.end_ns[i] > t.start_ns[i]) used[tasks.stream[i]] = true;
    });
    const order = data.streams.map(function (s, id) { return id; }).filter(function (id) { return used[id]; });
    order.sort(function (a, b) { return data.streams[a].rank - data.streams[b].rank || a - b; });
    const shown = order.slice(0, MAX_ROWS), rowOf = new Int32Array(data.streams.length).fill(-1);
    shown.forEach(function (id, row) { rowOf[id] = row; });
    if (order.length > shown.length) {
      element("p", section, {class: "note"}, "Showing the first " + shown.length + " of " + order.length +
              " streams (the ranks in order).");
    }
    const makespan = largest(data.timelines.map(function (t) { return t.makespan_ns; }), 1);
    const colorOf = names.map(function (name) { return PASS_COLORS[name.charAt(0)]; });
    function color(i) {
      const category = names[tasks.category[i]];
      if (category !== 'compute') return CATEGORY_COLORS[category] || PALETTE[9];
      const base = colorOf[tasks.name[i]] || PALETTE[0];
      const chunk = tasks.chunk ? Math.max(0, tasks.chunk[i]) : 0, mb = tasks.micro_batch[i];
      return shade(base, Math.min(0.6, 0.22 * chunk) - (mb >= 0 && mb % 2 === 1 ? 0.12 : 0));
    }
    legend(section, [
      ['forward', PASS_COLORS.F], ['backward', PASS_COLORS.B], ['weight gradient', PASS_COLORS.W],
      ['later model chunk', shade(PASS_COLORS.F, 0.44)],
      ['odd micro-batch', shade(PASS_COLORS.F, -0.12)]
    ].concat(Object.keys(CATEGORY_COLORS).map(function(k) {
      return [k, CATEGORY_COLORS[k]];
    })));
    let drawn = 0;
    data.timelines.forEach(function (timeline) {
      drawn += drawTimeline(section, data, timeline, shown, rowOf, makespan, color);
    });
    return drawn;
  }

  // |hex| mixed with white (amount > 0) or black (amount < 0).
  function shade(hex, amount) {
    const n = parseInt(hex.slice(1), 16), target = amount > 0 ? 255 : 0, a = Math.abs(amount);
    const mix = function(c) {
      return Math.round(c + (target - c) * a);
    };
    const rgb = [mix(n >> 16 & 255), mix(n >> 8 & 255), mix(n & 255)];
    return '#' +
        rgb.map(function(c) {
             return (c < 16 ? '0' : '') + c.toString(16);
           })
            .join('');
  }

  function rowName(data, id) {
    const s = data.streams[id];
    const rank =
        data.rank_names && data.rank_names[s.rank] ? data.rank_names[s.rank] : 'rank ' + s.rank;
    return rank + ' ' + s.name;
  }

  function drawTimeline(section, data, timeline, shown, rowOf, makespan, color) {
    const tasks = data.tasks, left = LABEL_WIDTH,
          width = Math.max(900, (section.clientWidth || 1200) - 44);
    const rowHeight = ROW_HEIGHT, top = 18, height = top + shown.length * rowHeight + 4;
    heading(section, timeline.title + ": " + seconds(timeline.makespan_ns * 1e-9));
    const bar = element('div', section, {class: 'zoom'});
    const buttons = [['+', 0.5], ['\u2212', 2], ['whole step', 0]].map(function(b) {
      return [element('button', bar, {type: 'button'}, b[0]), b[1]];
    });
    const canvas = element('canvas', section, {width: width, height: height});
    const ctx = canvas.getContext('2d');
    const rows = shown.map(function() {
      return [];
    });
    for (let i = 0; i < tasks.stream.length; i++) {
      const row = rowOf[tasks.stream[i]];
      if (row >= 0 && timeline.end_ns[i] > timeline.start_ns[i]) rows[row].push(i);
    }
    const view = {t0: 0, t1: makespan};
    function scale() {
      return (width - left - 10) / (view.t1 - view.t0);
    }
    function draw() {
      const k = scale();
      ctx.clearRect(0, 0, width, height);
      ctx.font = '10px DejaVu Sans, sans-serif';
      ctx.fillStyle = '#333';
      ticks(view.t1 * 1e-9, 8, view.t0 * 1e-9).forEach(function(t) {
        const x = left + (t * 1e9 - view.t0) * k;
        ctx.fillRect(x, top - 4, 1, 4);
        ctx.fillText(seconds(t), x + 2, top - 6);
      });
      let labels = 0;
      shown.forEach(function(id, row) {
        ctx.fillStyle = row % 2 ? '#f6f8fa' : '#ffffff';
        ctx.fillRect(0, top + row * rowHeight, width, rowHeight);
        ctx.fillStyle = '#333';
        ctx.fillText(rowName(data, id), 4, top + row * rowHeight + rowHeight - 3, left - 8);
        labels += 1;
      });
      let marks = 0;
      ctx.save();
      ctx.beginPath();
      ctx.rect(left, 0, width - left, height);
      ctx.clip();
      rows.forEach(function(list, row) {
        list.forEach(function(i) {
          const start = timeline.start_ns[i], end = timeline.end_ns[i];
          if (end < view.t0 || start > view.t1) return;
          ctx.fillStyle = color(i);
          ctx.fillRect(
              left + (start - view.t0) * k, top + row * rowHeight, Math.max(0.5, (end - start) * k),
              rowHeight - 1);
          marks += 1;
        });
      });
      ctx.restore();
      canvas.dataset.labels = String(labels);
      return marks;
    }
    // Zoom by |factor| about time |at|, within the step; 0 shows the whole step.
    function zoom(factor, at) {
      if (factor === 0) {
        view.t0 = 0;
        view.t1 = makespan;
        return draw();
      }
      const span = Math.min(makespan, Math.max(1000, (view.t1 - view.t0) * factor));
      view.t0 =
          Math.max(0, Math.min(makespan - span, at - (at - view.t0) * span / (view.t1 - view.t0)));
      view.t1 = view.t0 + span;
      return draw();
    }
    function timeAt(event) {
      const box = canvas.getBoundingClientRect();
      return view.t0 + (event.clientX - box.left - left) / scale();
    }
    buttons.forEach(function(b) {
      b[0].addEventListener('click', function() {
        zoom(b[1], (view.t0 + view.t1) / 2);
      });
    });
    canvas.addEventListener('wheel', function(event) {
      event.preventDefault();
      zoom(event.deltaY < 0 ? 0.8 : 1.25, timeAt(event));
    }, {passive: false});
    let dragging = null;
    canvas.addEventListener('mousedown', function(event) {
      dragging = {x: event.clientX, t0: view.t0};
    });
    window.addEventListener('mouseup', function() {
      dragging = null;
    });
    canvas.addEventListener('dblclick', function() {
      zoom(0, 0);
    });
    const drawn = draw();
    canvas.dataset.tasks = String(drawn);
    canvas.addEventListener('mousemove', function(event) {
      if (dragging) {
        const span = view.t1 - view.t0;
        view.t0 = Math.max(
            0, Math.min(makespan - span, dragging.t0 - (event.clientX - dragging.x) / scale()));
        view.t1 = view.t0 + span;
        draw();
        return hideTooltip();
      }
      const box = canvas.getBoundingClientRect();
      const row = Math.floor((event.clientY - box.top - top) / rowHeight);
      const t = timeAt(event);
      const hit = row >= 0 && row < rows.length ? rows[row].find(function (i) {
        return timeline.start_ns[i] <= t && t <= timeline.end_ns[i];
      }) : undefined;
      if (hit === undefined) return hideTooltip();
      const mb = tasks.micro_batch[hit], chunk = tasks.chunk ? tasks.chunk[hit] : -1;
      showTooltip(
          event,
          data.names[tasks.label[hit]] +
              (mb >= 0 ? ' (micro-batch ' + mb + (chunk >= 0 ? ', chunk ' + chunk : '') + ')' :
                         '') +
              '\n' + rowName(data, shown[row]) + '\n' + data.names[tasks.category[hit]] +
              ', task ' + hit + ' \'' + data.names[tasks.name[hit]] + '\'\n' +
              seconds(timeline.start_ns[hit] * 1e-9) + ' + ' +
              seconds((timeline.end_ns[hit] - timeline.start_ns[hit]) * 1e-9));
    });
    canvas.addEventListener("mouseleave", hideTooltip);
    return drawn;
  }

  // Axes for an SVG chart: |plot| is {left, top, width, height}; returns the scales.
  // Byte axes tick at round GiB.
  function axisTicks(max, count, format, min) {
    const unit = format === gib ? 1073741824 : 1;
    return ticks(max / unit, count, (min || 0) / unit).map(function (v) { return v * unit; });
  }
  // The x axis runs from |xMin| (0 if not given) to |xMax|, the y axis from 0 to |yMax|.
  function axes(svg, plot, xMax, yMax, xFormat, yFormat, xMin) {
    xMin = xMin || 0;
    const x = function (v) { return plot.left + (v - xMin) / (xMax - xMin) * plot.width; };
    const y = function (v) { return plot.top + plot.height - v / yMax * plot.height; };
    axisTicks(xMax, 6, xFormat, xMin).forEach(function (v) {
      svgElement("line", svg, {x1: x(v), x2: x(v), y1: plot.top, y2: plot.top + plot.height, stroke: "#eef1f4"});
      svgElement("text", svg, {x: x(v), y: plot.top + plot.height + 14, "text-anchor": "middle"}, xFormat(v));
    });
    axisTicks(yMax, 5, yFormat).forEach(function (v) {
      svgElement("line", svg, {x1: plot.left, x2: plot.left + plot.width, y1: y(v), y2: y(v), stroke: "#eef1f4"});
      svgElement("text", svg, {x: plot.left - 4, y: y(v) + 4, "text-anchor": "end"}, yFormat(v));
    });
    return {x: x, y: y};
  }

  // Memory: each stage's bytes over the step as a step line, its peak marked, the usable limit
  // dashed; then what holds each stage's peak as a stacked bar.
  function renderMemory(section, data) {
    const stages = data.stages, width = 1140, plot = {left: 70, top: 10, width: width - 90, height: 300};
    const yMax = largest(stages.map(function (s) { return s.peak_bytes; }), data.limit_bytes);
    const svg = svgElement("svg", section, {width: width, height: plot.height + 40});
    const s = axes(svg, plot, Math.max(1, data.makespan_ns) * 1e-9, yMax * 1.05, seconds, gib);
    let drawn = 0;
    svgElement("line", svg, {x1: plot.left, x2: plot.left + plot.width, y1: s.y(data.limit_bytes),
                             y2: s.y(data.limit_bytes), stroke: "#b00020", "stroke-dasharray": "6 4"});
    svgElement("text", svg, {x: plot.left + plot.width - 4, y: s.y(data.limit_bytes) - 4, "text-anchor": "end"},
               "usable " + gib(data.limit_bytes));
    stages.forEach(function (stage, k) {
      const color = PALETTE[k % PALETTE.length];
      let path = "";
      for (let i = 0; i < stage.time_ns.length; i++) {
        const x = s.x(stage.time_ns[i] * 1e-9), y = s.y(stage.bytes[i]);
        path += (i === 0 ? "M" + x + " " + y : "H" + x + "V" + y);
      }
      if (stage.time_ns.length > 0) path += "H" + s.x(data.makespan_ns * 1e-9);
      svgElement("path", svg, {d: path, fill: "none", stroke: color, "stroke-width": 1.5, class: "memory-line"});
      const peak = svgElement("circle", svg, {cx: s.x(stage.peak_time_ns * 1e-9), cy: s.y(stage.peak_bytes), r: 4,
                                              fill: color, stroke: "#000", class: "peak"});
      svgElement("title", peak, {}, "stage " + stage.stage + " peak " + gib(stage.peak_bytes) + " at " +
                 seconds(stage.peak_time_ns * 1e-9) + (stage.peak_task ? ": " + stage.peak_task : ""));
      drawn += 2;
    });
    legend(section, stages.map(function (stage, k) {
      return ["stage " + stage.stage + " (peak " + gib(stage.peak_bytes) +
              (stage.stage === data.peak_stage ? ", the highest" : "") + ")", PALETTE[k % PALETTE.length]];
    }));
    return drawn + renderMemoryItems(section, data);
  }

  function renderMemoryItems(section, data) {
    const stages = data.stages.filter(function (s) { return s.items.length > 0; });
    if (stages.length === 0) return 0;
    heading(section, "What holds each stage's peak (outside it, " + gib(data.reserved_bytes) +
            ": the CUDA context, cuBLAS workspaces, NCCL buffers and the allocator's fragmentation headroom)");
    const items = stages[0].items.map(function (item) { return item.item; });
    const barHeight = 18, plot = {left: 70, top: 6, width: 1040, height: stages.length * (barHeight + 6)};
    const svg = svgElement("svg", section, {width: 1140, height: plot.height + 30});
    const xMax = largest(stages.map(function (s) { return s.peak_bytes; }), data.limit_bytes);
    const s = axes(svg, plot, xMax * 1.05, 1, gib, function () { return ""; });
    let drawn = 0;
    stages.forEach(function (stage, row) {
      let x = 0;
      const y = plot.top + row * (barHeight + 6) + 3;
      svgElement("text", svg, {x: plot.left - 4, y: y + 13, "text-anchor": "end"}, "stage " + stage.stage);
      stage.items.forEach(function (item, k) {
        if (item.bytes <= 0) return;
        const bar = svgElement("rect", svg, {x: s.x(x), y: y, width: s.x(x + item.bytes) - s.x(x), height: barHeight,
                                             fill: PALETTE[k % PALETTE.length], class: "memory-item"});
        svgElement("title", bar, {}, "stage " + stage.stage + " " + label(item.item) + ": " + gib(item.bytes));
        x += item.bytes;
        drawn += 1;
      });
    });
    legend(section, items.map(function (item, k) { return [label(item), PALETTE[k % PALETTE.length]]; }));
    return drawn;
  }

  // Horizontal bars, one group per row: rows are [name, [values...]] and |series| names the values.
  function barChart(section, rows, series, format) {
    const barHeight = 14, group = barHeight * series.length + 8, left = 170;
    const plot = {left: left, top: 6, width: 1140 - left - 60, height: rows.length * group};
    const svg = svgElement("svg", section, {width: 1140, height: plot.height + 30});
    const xMax = largest(rows.map(function (r) { return largest(r[1], 0); }), 1e-12);
    const s = axes(svg, plot, xMax * 1.1, 1, format, function () { return ""; });
    let drawn = 0;
    rows.forEach(function (row, r) {
      const y0 = plot.top + r * group + 4;
      svgElement("text", svg, {x: left - 6, y: y0 + group / 2, "text-anchor": "end"}, row[0]);
      row[1].forEach(function (value, k) {
        const bar = svgElement("rect", svg, {x: left, y: y0 + k * barHeight, width: Math.max(0, s.x(value) - left),
                                             height: barHeight - 2, fill: PALETTE[k], class: "bar"});
        svgElement("title", bar, {}, row[0] + " (" + series[k] + "): " + format(value));
        svgElement("text", svg, {x: s.x(value) + 4, y: y0 + k * barHeight + 10}, format(value));
        drawn += 1;
      });
    });
    if (series.length > 1) legend(section, series.map(function (name, k) { return [name, PALETTE[k]]; }));
    return drawn;
  }

  function renderBreakdown(section, data) {
    element("p", section, {class: "note"}, "Step time " + seconds(data.step_time_s) +
            ". The breakdown averages the stages; the critical path sums to the step time.");
    const rows = Object.keys(data.breakdown).map(function (k) { return [label(k), [data.breakdown[k]]]; });
    let drawn = barChart(section, rows, ["step breakdown"], seconds);
    heading(section, "Critical path");
    const path = Object.keys(data.critical_path).map(function (k) { return [label(k), [data.critical_path[k]]]; });
    drawn += barChart(section, path, ["critical path"], seconds);
    heading(section, "Per stage");
    drawn += barChart(section, data.stages.map(function (s) {
      return ["stage " + s.stage, [s.compute_s, s.bubble_s]];
    }), ["compute", "bubble"], seconds);
    return drawn;
  }

  function strategyText(s) {
    let text = "tp" + s.tp + " pp" + s.pp + " dp" + s.dp;
    if (s.cp > 1) text += " cp" + s.cp;
    if (s.ep > 1) text += " ep" + s.ep;
    if (s.vpp > 1) text += " vpp" + s.vpp;
    return text + " mb" + s.micro_batch + " " + s.schedule + (s.recompute !== "none" ? " rc:" + s.recompute : "") +
           (s.zero_stage > 0 ? " zero" + s.zero_stage : "");
  }
  function counted(v) { return String(Math.round(v)); }

  // Ranked plans: the objective's score (what ranked them: step time, GPU-hours per billion tokens,
  // memory share, effective step) against peak memory, each point's area by its GPUs; the table;
  // the rejected counts.
  function renderPlans(section, data) {
    const plans = data.plans, plot = {left: 70, top: 10, width: 1040, height: 280};
    const svg = svgElement("svg", section, {width: 1140, height: plot.height + 40});
    const unit = data.score_unit || 's';
    const scoreText = unit === 'share' ? percent :
        unit === 'gpu_hours' ?
                                         function(v) {
                                           return v.toPrecision(4) + ' GPU-h/B tok';
                                         } :
                                         seconds;
    const scores = plans.map(function(p) {
      return p.score;
    });
    const highest = largest(scores, 1e-9),
          lowest = -largest(
              scores.map(function(t) {
                return -t;
              }),
              -highest);
    const margin = Math.max(highest - lowest, highest * 0.02) * 0.1;
    const xMin = Math.max(0, lowest - margin), xMax = highest + margin;
    const limit = plans.length > 0 ? plans[0].memory_limit_bytes : 0;
    const yMax = largest(plans.map(function (p) { return p.peak_memory_bytes; }), Math.max(limit, 1));
    const s = axes(svg, plot, xMax, yMax * 1.05, scoreText, gib, xMin);
    const maxGpus = largest(plans.map(function (p) { return p.gpus; }), 1);
    let drawn = 0;
    plans.slice().reverse().forEach(function(p) {
      const dot = svgElement('circle', svg, {
        cx: s.x(p.score),
        cy: s.y(p.peak_memory_bytes),
        r: 4 + 8 * Math.sqrt(p.gpus / maxGpus),
        fill: p.rank === 1 ? '#e15759' : '#4e79a7',
        'fill-opacity': 0.7,
        class: 'plan'
      });
      svgElement(
          'title', dot, {},
          '#' + p.rank + ' ' + strategyText(p.strategy) + '\n' + scoreText(p.score) + ', step ' +
              seconds(p.step_time_s) + ', ' + gib(p.peak_memory_bytes) + ', ' + p.gpus + ' GPUs');
      drawn += 1;
    });
    const scoreLabel = data.score_label || 'step time';
    element(
        'p', section, {class: 'note'},
        'x: ' + scoreLabel + ' (the objective, ' + data.objective +
            '; lower ranks higher), y: peak memory, area: GPUs; red: the best plan' +
            (data.interrupted ? '; INTERRUPTED: a partial search' : '') + '.');
    const table = element("table", section);
    const head = element("tr", table);
    ['#', 'strategy', 'GPUs', scoreLabel, 'step time', 'peak memory', 'MFU'].forEach(function(h) {
      element('th', head, {}, h);
    });
    plans.forEach(function (p) {
      const row = element("tr", table, {class: "plan-row"});
      [String(p.rank), strategyText(p.strategy), String(p.gpus), scoreText(p.score),
       seconds(p.step_time_s), gib(p.peak_memory_bytes), percent(p.mfu)]
          .forEach(function(v) {
            element('td', row, {}, v);
          });
    });
    heading(section, "Where the " + data.counts.enumerated + " strategies went");
    const c = data.counts;
    drawn += barChart(section, Object.keys(c).filter(function (k) { return k !== "enumerated"; }).map(function (k) {
      return [label(k), [c[k]]];
    }), ["strategies"], counted);
    if (data.rejections.length > 0) {
      heading(section, "Rejected, by rule");
      drawn += barChart(section, data.rejections.map(function (r) { return [r.rule, [r.count]]; }), ["rejected"],
                        counted);
    }
    return drawn;
  }

  // Validate: predicted and measured side by side, with the error of each.
  function renderValidate(section, data) {
    const table = element("table", section);
    const head = element("tr", table);
    ["", "predicted", "measured", "error"].forEach(function (h) { element("th", head, {}, h); });
    function row(name, predicted, measured, error) {
      const tr = element("tr", table, {class: "comparison"});
      [name, predicted, measured, percent(error)].forEach(function (v) { element("td", tr, {}, v); });
    }
    const classes = data.classes.concat(data.work_classes);
    row("step time", seconds(data.step_time.predicted_s), seconds(data.step_time.measured_s),
        data.step_time.error_fraction);
    row("bubble", percent(data.bubble_fraction.predicted), percent(data.bubble_fraction.measured),
        data.bubble_fraction.error_fraction);
    row("peak memory", gib(data.peak_memory.predicted_bytes), gib(data.peak_memory.measured_bytes),
        data.peak_memory.error_fraction);
    classes.forEach(function (c) {
      row(c.name + " (" + c.tasks + " tasks)", seconds(c.predicted_s), seconds(c.measured_s), c.error_fraction);
    });
    const order = data.order;
    element("p", section, {class: "note"}, "Order: " + order.dependency_violations + " dependency and " +
            order.rendezvous_violations + " rendezvous violations, " + order.order_inversions + " inversions in " +
            order.pairs_checked + " pairs; " + data.steps + " steps measured.");
    const rows = [["step", [data.step_time.predicted_s, data.step_time.measured_s]]].concat(
      classes.map(function (c) { return [c.name, [c.predicted_s, c.measured_s]]; }));
    return barChart(section, rows, ["predicted", "measured"], seconds);
  }

  // Fidelity residuals (loom_fidelity --report): each predicted case at its measured value (log
  // scale) and loom's signed error, in-sample (filled) and leave-one-source-out (hollow) where a
  // refit moved it; zero error is the dark line.
  function renderResiduals(section, data) {
    const points = data.points;
    element("p", section, {class: "note"}, points.length + " cases predicted, " + data.failed +
            " not (listed in the text report); in-sample mean |error| " + percent(data.mape) + ", bias " +
            percent(data.bias) + "; leave-one-source-out " + percent(data.loso_mape) + ", bias " +
            percent(data.loso_bias) + " (" + data.source_file + ")");
    if (points.length === 0) return 0;
    const width = 1140, plot = {left: 70, top: 10, width: width - 100, height: 260};
    const svg = svgElement("svg", section, {width: width, height: plot.height + 44});
    const logs = points.map(function (p) { return Math.log10(p.measured); });
    let xMin = Math.min.apply(null, logs), xMax = Math.max.apply(null, logs);
    if (!(xMax > xMin)) { xMin -= 0.5; xMax += 0.5; }
    const errors = points.map(function (p) { return p.error_fraction; }).concat(
      points.map(function (p) { return p.loso_error_fraction; }));
    const yAbs = Math.max(0.05, Math.max.apply(null, errors.map(Math.abs))) * 1.1;
    const x = function (v) { return plot.left + (Math.log10(v) - xMin) / (xMax - xMin) * plot.width; };
    const y = function (e) { return plot.top + (yAbs - e) / (2 * yAbs) * plot.height; };
    ticks(yAbs, 4).forEach(function (t) {
      [t, -t].forEach(function (e) {
        svgElement("line", svg, {x1: plot.left, x2: plot.left + plot.width, y1: y(e), y2: y(e), stroke: "#eef1f4"});
        svgElement("text", svg, {x: plot.left - 4, y: y(e) + 4, "text-anchor": "end"}, percent(e));
      });
    });
    for (let d = Math.ceil(xMin); d <= Math.floor(xMax); d++) {
      svgElement("line", svg, {x1: x(Math.pow(10, d)), x2: x(Math.pow(10, d)), y1: plot.top, y2: plot.top + plot.height,
                               stroke: "#eef1f4"});
      svgElement("text", svg, {x: x(Math.pow(10, d)), y: plot.top + plot.height + 14, "text-anchor": "middle"},
                 String(Math.pow(10, d)) + " " + data.unit);
    }
    svgElement("line", svg, {x1: plot.left, x2: plot.left + plot.width, y1: y(0), y2: y(0), stroke: "#333"});
    svgElement("text", svg, {x: plot.left + plot.width / 2, y: plot.top + plot.height + 32, "text-anchor": "middle"},
               "measured (" + data.unit + ", log scale); up: loom predicts more than measured");
    let drawn = 0;
    points.forEach(function (p) {
      if (data.refitted && p.loso_error_fraction !== p.error_fraction) {
        svgElement("circle", svg, {cx: x(p.measured), cy: y(p.loso_error_fraction), r: 3, fill: "none",
                                   stroke: PALETTE[1], class: "loso-point"});
      }
      const dot = svgElement("circle", svg, {cx: x(p.measured), cy: y(p.error_fraction), r: 3, fill: PALETTE[0],
                                             "fill-opacity": 0.7, class: "point"});
      svgElement("title", dot, {}, p["case"] + ": predicted " + p.predicted.toPrecision(4) + ", measured " +
                 p.measured.toPrecision(4) + " " + data.unit + " (" + percent(p.error_fraction) + ")");
      drawn += 1;
    });
    if (data.refitted) legend(section, [["in-sample", PALETTE[0]], ["leave-one-source-out", PALETTE[1]]]);
    return drawn;
  }

  const RENDERERS = {gantt: renderGantt, memory: renderMemory, breakdown: renderBreakdown, plans: renderPlans,
                     validate: renderValidate, residuals: renderResiduals};

  // report.html#<view> shows that view alone, under the page's header; no fragment (or an unknown
  // one) shows them all. The sections' ids are "view-<view>", so the browser does not scroll the
  // header away to reach the fragment's element.
  function showFragment(sections) {
    const view = decodeURIComponent(location.hash.replace(/^#/, ""));
    const known = sections.some(function (s) { return s.dataset.view === view; });
    sections.forEach(function (s) { s.classList.toggle("hidden", known && s.dataset.view !== view); });
  }

  function render() {
    const page = JSON.parse(document.getElementById("loom-data").textContent);
    const container = document.getElementById("views"), sections = [];
    page.views.forEach(function (view) {
      const section = element("section", container, {id: "view-" + view.id, "data-view": view.id, "data-kind": view.kind,
                                                     "data-drawn": "0"});
      element("h2", section, {}, view.title);
      sections.push(section);
      try {
        section.dataset.drawn = String(RENDERERS[view.kind](section, view.data));
      } catch (e) {
        reportError("view " + view.id + ": " + (e && e.stack ? e.stack : e));
      }
    });
    showFragment(sections);
    window.addEventListener("hashchange", function () { showFragment(sections); });
  }

  try {
    render();
  } catch (e) {
    reportError("report: " + (e && e.stack ? e.stack : e));
  }
  document.body.dataset.rendered = "1";
})();
