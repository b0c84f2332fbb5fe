"""The Java (SparkPS) kernel against Jupyter's protocol: jupyter_kernel_test's standard checks
plus what this kernel promises beyond them (errors with cell lines, interrupts, tables).

Run by KernelProtocolIT with JUPYTER_PATH pointing at a freshly installed kernelspec."""
import unittest

import jupyter_kernel_test
from jupyter_client.utils import run_sync


class SparkPsKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "sparkps"
    language_name = "java"
    file_extension = ".jshell"

    code_hello_world = 'System.out.println("hello, world");'
    code_stderr = 'System.err.println("to stderr");'
    completion_samples = [
        {"text": "Math.sqr", "matches": {"sqrt("}},
        {"text": "String s = \"x\"; s.toUpperC", "matches": {"toUpperCase("}},
    ]
    complete_code_samples = ["1 + 1", "int x = 3;", "for (int i = 0; i < 3; i++) { x += i; }", "void f() {}"]
    incomplete_code_samples = ["for (int i = 0; i < 3; i++) {", "int f(int a) {", "String s = \"a\" +"]
    invalid_code_samples = ["int x = 3;)"]
    code_generate_error = 'throw new IllegalStateException("boom");'
    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": "\"a\" + \"b\"", "result": "ab"},
        {"code": "List.of(1, 2)", "result": "[1, 2]"},
    ]
    code_display_data = [
        {"code": 'display(html("<b>bold</b>"));', "mime": "text/html"},
        {"code": 'display(chart("loss").line("l", List.of(1, 2), List.of(0.5, 0.25)));', "mime": "image/png"},
    ]
    code_inspect_sample = "Math.max("

    def run_cell(self, code, timeout=120):
        self.flush_channels()
        return self.execute_helper(code, timeout=timeout)

    def await_iopub(self, msg_id, msg_type, timeout=20):
        """The first iopub message of msg_type that answers msg_id (earlier tests' late ones are skipped)."""
        while True:
            msg = run_sync(self.kc.iopub_channel.get_msg)(timeout=timeout)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == msg_type:
                return msg

    def test_sparkps_error_names_exception_and_cell_line(self):
        reply, outputs = self.run_cell("int a = 1;\nint b = a / 0;")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "ArithmeticException")
        error = [m for m in outputs if m["msg_type"] == "error"][0]["content"]
        self.assertEqual(error["traceback"][0], "java.lang.ArithmeticException: / by zero")
        self.assertEqual(error["traceback"][1], "  at line 2: int b = a / 0;")
        self.assertEqual(reply["content"]["traceback"], error["traceback"], "the reply carries the same traceback")

    def test_sparkps_compile_error_shows_javac_message_and_line(self):
        reply, outputs = self.run_cell("int a = 1;\nString s = a;")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "CompilationError")
        self.assertTrue(reply["content"]["evalue"].startswith("line 2: incompatible types"), reply["content"])

    def test_sparkps_stdout_streams_while_the_cell_runs(self):
        msg_id = self.kc.execute(code='for (int i = 0; i < 3; i++) { System.out.println("tick " + i); '
                                      'Thread.sleep(1500); }')
        first = self.await_iopub(msg_id, "stream")
        self.assertIn("tick 0", first["content"]["text"])
        # the first line arrived while the cell still runs: its reply comes seconds later
        reply = self.kc.get_shell_msg(timeout=20)
        self.assertEqual(reply["content"]["status"], "ok")

    def test_sparkps_interrupt_stops_the_cell_and_keeps_the_kernel(self):
        self.flush_channels()
        msg_id = self.kc.execute(code="Thread.sleep(60_000);")
        self.await_iopub(msg_id, "execute_input")  # the cell has started
        self.km.interrupt_kernel()
        reply = self.get_non_kernel_info_reply(timeout=20)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "InterruptedException")
        reply, outputs = self.run_cell("1 + 1")
        self.assertEqual(reply["content"]["status"], "ok")
        results = [m for m in outputs if m["msg_type"] == "execute_result"]
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "2")

    def test_sparkps_dataset_displays_as_html_table(self):
        reply, outputs = self.run_cell('Notebook.spark("local[4]").range(3).toDF("n")', timeout=180)
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        result = [m for m in outputs if m["msg_type"] == "execute_result"][0]["content"]["data"]
        self.assertIn("<th>n<br><small>bigint</small></th>", result["text/html"])
        self.assertIn("<td>2</td>", result["text/html"])
        self.assertIn("3 rows", result["text/plain"])

    def test_sparkps_progress_updates_one_display_in_place(self):
        code = """var spark = Notebook.spark("local[4]");
var job = new io.sparkps.spark.TrainingCluster(spark,
        io.sparkps.spark.ClusterSpec.builder().setNumPs(1).setNumWorkers(2).build())
    .runAsync(spark.range(4).toDF(), ctx -> {
      for (int i = 1; i <= 6; i++) {
        ctx.progress().report(i, i * 10, Map.of("loss", 1.0 / i));
        Thread.sleep(400);
      }
      return 0;
    });
progress(job)"""
        reply, outputs = self.run_cell(code, timeout=180)
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        shown = [m for m in outputs if m["msg_type"] == "display_data"]
        updates = [m for m in outputs if m["msg_type"] == "update_display_data"]
        self.assertEqual(len(shown), 1, "one display")
        display_id = shown[0]["content"]["transient"]["display_id"]
        self.assertGreaterEqual(len(updates), 3, "updated in place while the run went on")
        self.assertTrue(all(u["content"]["transient"]["display_id"] == display_id for u in updates))
        last = updates[-1]["content"]["data"]["text/plain"]
        self.assertIn("SUCCEEDED", last)
        self.assertIn("chief 0 @ 127.0.0.1: step 6, 60 examples, loss 0.1667", last)
        self.assertIn("<tr><td>chief 0</td><td>127.0.0.1</td><td>6</td>", updates[-1]["content"]["data"]["text/html"])
        result = [m for m in outputs if m["msg_type"] == "execute_result"][0]
        self.assertEqual(result["content"]["data"]["text/plain"], "SUCCEEDED")


if __name__ == "__main__":
    unittest.main(verbosity=2)
