"""The kit's companion modules, behind pybench.py: the core (harness, sandbox, engine, jailed), one module per
benchmark (suite, original_pybench, mlbench), and the rest (report, classroom, airgap, gpu); with the jail's pinned
requirements (jail/), the report's and classroom's templates (templates/) and a build patch (patches/). Importing the
package does nothing."""
