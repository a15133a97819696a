"""What is registered at run time, behind one seam (`Registry`, base.py): issued tokens, servers and
single tools registered into namespaces (spec 002). sqlite.py is the embedded default."""
