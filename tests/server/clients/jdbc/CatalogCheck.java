import java.sql.*;

/**
 * Drives penstock through the PostgreSQL JDBC driver: DatabaseMetaData.getTables and
 * getColumns, and a PreparedStatement with int, string and date parameters. Prints one
 * line per fact (TABLE ..., COLUMN ..., ROW ...); test_jdbc.py checks them.
 * Usage: java -cp postgresql.jar:DIR CatalogCheck jdbc:postgresql://host:port/db user
 */
public class CatalogCheck {
    public static void main(String[] args) throws Exception {
        try (Connection conn = DriverManager.getConnection(args[0], args[1], "")) {
            DatabaseMetaData meta = conn.getMetaData();
            System.out.println("PRODUCT " + meta.getDatabaseProductName() + " " + meta.getDatabaseMajorVersion());
            try (ResultSet rs = meta.getTables(null, "public", "%", new String[]{"TABLE"})) {
                while (rs.next()) {
                    System.out.println("TABLE " + rs.getString("TABLE_SCHEM") + " " + rs.getString("TABLE_NAME")
                            + " " + rs.getString("TABLE_TYPE"));
                }
            }
            try (ResultSet rs = meta.getColumns(null, "public", "sample", "%")) {
                while (rs.next()) {
                    System.out.println("COLUMN " + rs.getString("COLUMN_NAME") + " " + rs.getInt("DATA_TYPE")
                            + " " + rs.getString("TYPE_NAME") + " " + rs.getInt("ORDINAL_POSITION")
                            + " " + rs.getString("IS_NULLABLE"));
                }
            }
            String sql = "SELECT id, name, day FROM sample WHERE id >= ? AND name <> ? AND day < ? ORDER BY id";
            try (PreparedStatement ps = conn.prepareStatement(sql)) {
                for (int run = 0; run < 6; run++) {  // past prepareThreshold (5): server-side statements
                    ps.setInt(1, 1);
                    ps.setString(2, "beta");
                    ps.setDate(3, Date.valueOf("2010-01-01"));
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            if (run == 5) {
                                System.out.println("ROW " + rs.getInt(1) + " " + rs.getString(2) + " " + rs.getDate(3));
                            }
                        }
                    }
                }
            }
        }
    }
}
