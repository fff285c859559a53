"""benchmarks/gpu's results as markdown: the peaks, the evaluation pipeline, the pilot row, a row per configuration."""


def shown(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def row_note(row: dict) -> str:
    notes = [f"runs as {row['runs_as']}"] if row["runs_as"] != row["precision"] else []
    if "ours_over_peer" in row:
        notes.append(f"our CLIP's images/s are {row['ours_over_peer']:.3f} x these")
    if "lowered_from" in row:
        notes.append(f"batch {row['lowered_from']} ran out of memory when timed")
    return "; ".join(notes)


def pilot_lines(pilot: dict | None) -> list[str]:
    """The pilot row's wall time and per-rule job seconds (nothing when it was not asked for)."""
    if not pilot:
        return []
    if "error" in pilot:
        return [f"Pilot row: {pilot['error']}", ""]
    rules = ", ".join(f"{rule} {r['jobs']} ({r['total_s']:.0f} s)" for rule, r in pilot["rules"].items())
    return [f"Pilot row `{pilot['target']}` from nothing, {pilot['cores']} cores: {pilot['wall_s']:.0f} s, exit "
            f"{pilot['status']}; jobs by rule (their seconds): {rules}.", ""]


def profile_lines(rows: list[dict]) -> list[str]:
    """Each profiled configuration's step time by kind of work (nothing when none was profiled)."""
    lines = []
    for row in (row for row in rows if "profile" in row):
        shares = ", ".join(f"{kind} {share:.0%}" for kind, share in row["profile"]["shares"].items())
        lines.append(f"- {row['method']} {row['backbone']} {row['precision']} compile "
                     f"{row.get('compile_mode') or 'off'} attention {row.get('attention', 'auto')}: "
                     f"{1000 * row['profile']['profiled_s']:.0f} ms profiled a step; {shares}")
    return ["", "Where a step's time goes (kernel time by kind of work):", "", *lines] if lines else []


def markdown(results: dict) -> str:
    env, peaks, ev = results["environment"], results["peaks"], results.get("eval_pipeline") or {}
    settings = results["settings"]
    sheet = f"{peaks['datasheet_tflops']} TFLOP/s" if peaks["datasheet_tflops"] else "not in the table"
    lines = [f"# benchmarks/gpu: {env['device_name']}", "",
             f"{results['started']}; torch {env['torch']}, {env['cpus']} CPUs; budget {results['budget_s']:.0f} s, "
             f"used {results['seconds']:.0f} s. Peaks: dense bf16 datasheet {sheet}; measured "
             f"{peaks['measured']['dtype']} matmul {peaks['measured']['matmul']} {peaks['measured']['tflops']:.1f} "
             f"TFLOP/s. A step: the median of up to {settings['steps']} timed after {settings['warmup']} warm-up "
             "steps. FLOPs: hypvl.workflow.cost's per step. pairs/s: the batch's image-text pairs; images/s: images encoded "
             "(HyCoCLIP: 2 per pair). Compiled: the eager configuration's batch.", ""]
    if "error" in ev:
        lines += [f"Evaluation input pipeline: {ev['error']}", ""]
    elif ev:
        def rates(way: str) -> str:
            figures = [ev[f"{part}_{way}_images_per_s"] for part in ("pipeline", "loading", "steady_pipeline",
                                                                      "steady_loading")]
            return "{:.0f} (decode+crop alone {:.0f}); once running {:.0f} (alone {:.0f})".format(*figures)

        lines += [f"Evaluation input pipeline ({ev['images']} JPEGs 500x375, {ev['jpeg_kb']:.0f} kB each, batch "
                  f"{ev['batch']}, MERU vit_b16 image encoder), images/s from the start: with {ev['loader_threads']} "
                  f"loader threads {rates('threads')}; with {ev['loader_processes']} loader processes "
                  f"(eval.num_workers) {rates('processes')}; the encoder alone {ev['encoder_images_per_s']:.0f}.", ""]
    if ev.get("bitwise"):
        lines += [f"Its features bitwise those of pixels made floats on the CPU: {ev['bitwise']['features']} "
                  f"(a division by the Python number 255 on the device would be: "
                  f"{ev['bitwise']['python_number_division']}).", ""]
    lines += pilot_lines(results.get("pilot_row"))
    lines += ["| method | backbone | precision | compile | attention | batch | ms/step | pairs/s | images/s | TFLOP/s "
              "| MFU datasheet | MFU measured | peak GiB | note |", "|" + "---|" * 14]
    for row in results["configurations"]:
        head = (f"| {row['method']} | {row['backbone']} | {row['precision']} | {row.get('compile_mode') or 'off'} | "
                f"{row.get('attention', 'auto')} |")
        if "step_s" not in row:
            lines.append(head + " |" * 8 + f" {row.get('error', 'not run yet')[:160].replace('|', '/')} |")
            continue
        lines.append(f"{head} {row['batch']} | {1000 * row['step_s']:.1f} | {row['pairs_per_s']:.0f} | "
                     f"{row['images_per_s']:.0f} | {row['tflops_per_s']:.3g} | {shown(row['mfu_datasheet'], '.1%')} | "
                     f"{shown(row['mfu_measured'], '.1%')} | {shown(row['peak_gib'], '.1f')} | "
                     f"{row_note(row)} |")
    return "\n".join(lines + profile_lines(results["configurations"])) + "\n"
